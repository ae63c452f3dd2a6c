// The CPU a run measured, as a string for people: /proc/cpuinfo's model name, with the family and
// model (x86) or the implementer and part (ARM) in parentheses. A model name alone often covers
// several generations ("AMD EPYC" under a hypervisor), and figures from two of them differ by more
// than the effects the harness measures, so every run records which one it was.
#pragma once

#include <fstream>
#include <istream>
#include <map>
#include <string>

namespace wslab::bench {

// Reads the first processor's block of a /proc/cpuinfo text (every processor of a machine is the
// same model here; a big.LITTLE ARM board lists several parts, of which the first is named).
inline std::string cpu_model_from(std::istream& cpuinfo) {
  std::map<std::string, std::string> fields;
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.empty()) {
      if (!fields.empty()) break;  // the end of the first processor's block
      continue;
    }
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t'))
      key.pop_back();
    std::string value = colon + 1 < line.size() ? line.substr(colon + 1) : "";
    if (!value.empty() && value.front() == ' ') value.erase(0, 1);
    fields.emplace(std::move(key), std::move(value));
  }
  const auto field = [&](const char* key) -> std::string {
    const auto it = fields.find(key);
    return it != fields.end() ? it->second : std::string();
  };
  std::string name = field("model name");
  std::string detail;
  if (!field("cpu family").empty() && !field("model").empty()) {
    detail = "family " + field("cpu family") + ", model " + field("model");
  } else if (!field("CPU implementer").empty() && !field("CPU part").empty()) {
    detail = "implementer " + field("CPU implementer") + ", part " + field("CPU part");
  }
  if (name.empty()) name = detail.empty() ? "unknown CPU" : "CPU";
  return detail.empty() ? name : name + " (" + detail + ")";
}

// The calling machine's, from /proc/cpuinfo; "unknown CPU" where it cannot be read.
inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  return cpu_model_from(in);
}

}  // namespace wslab::bench
