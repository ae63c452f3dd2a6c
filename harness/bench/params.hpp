// A workload cell's parameters travel from the driver to its child processes as one string,
// "key=value,key=value". This is the parser and the printer for that string.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace wslab::bench {

// Parses an expected result: exactly `count` space-separated unsigned integers.
inline std::vector<std::uint64_t> parse_numbers(const std::string& text, std::size_t count,
                                                std::string_view what) {
  std::vector<std::uint64_t> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == ' ') {
      ++pos;
      continue;
    }
    std::size_t used = 0;
    try {
      out.push_back(std::stoull(text.substr(pos), &used));
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || text[pos] == '-') break;
    pos += used;
  }
  if (out.size() != count || pos < text.size()) {
    throw std::invalid_argument(std::string(what) + ": malformed expected result \"" + text + "\"");
  }
  return out;
}

class Params {
 public:
  Params() = default;

  static Params parse(std::string_view text) {
    Params p;
    while (!text.empty()) {
      const std::size_t comma = text.find(',');
      const std::string_view item = text.substr(0, comma);
      const std::size_t eq = item.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        throw std::invalid_argument("bad parameter \"" + std::string(item) +
                                    "\": expected key=value");
      }
      p.values_[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
      if (comma == std::string_view::npos) break;
      text.remove_prefix(comma + 1);
    }
    return p;
  }

  // Values may not contain ',' (paths with commas are refused rather than mangled).
  Params& set(const std::string& key, const std::string& value) {
    if (value.find(',') != std::string::npos) {
      throw std::invalid_argument("parameter " + key + " may not contain a comma: " + value);
    }
    values_[key] = value;
    return *this;
  }
  Params& set(const std::string& key, std::uint64_t value) {
    return set(key, std::to_string(value));
  }

  bool has(const std::string& key) const { return values_.count(key) != 0; }

  const std::string& str(const std::string& key) const {
    const auto it = values_.find(key);
    if (it == values_.end()) throw std::invalid_argument("missing parameter " + key);
    return it->second;
  }

  std::uint64_t u64(const std::string& key) const {
    const std::string& v = str(key);
    std::size_t used = 0;
    std::uint64_t n = 0;
    try {
      n = std::stoull(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v.size() || v.empty() || v[0] == '-') {
      throw std::invalid_argument("parameter " + key + "=" + v + " is not a non-negative integer");
    }
    return n;
  }

  std::string to_string() const {
    std::string out;
    for (const auto& [k, v] : values_) {
      if (!out.empty()) out += ',';
      out += k + '=' + v;
    }
    return out;
  }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace wslab::bench
