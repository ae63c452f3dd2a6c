// SHA-1 (FIPS 180-4, sections 5.1.1, 6.1), for the UTS workload only: a UTS tree is defined by
// SHA-1 digests (each node's 20-byte state is the digest of its parent's state and its child
// index), so this function fixes the tree bit for bit. Not for security: SHA-1 is broken there.
//
//   classic::Sha1 h;  h.update(bytes, len);  classic::Sha1Digest d = h.finish();
//   classic::sha1_self_check()  // true when the FIPS test vectors come out right
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace classic {

using Sha1Digest = std::array<std::uint8_t, 20>;

class Sha1 {
 public:
  void update(const std::uint8_t* data, std::size_t len) {
    total_bytes_ += len;
    while (len > 0) {
      const std::size_t take = std::min(len, kBlock - buffered_);
      std::memcpy(buffer_.data() + buffered_, data, take);
      buffered_ += take;
      data += take;
      len -= take;
      if (buffered_ == kBlock) {
        compress(buffer_.data());
        buffered_ = 0;
      }
    }
  }

  // Pads (a 1 bit, zeros, the 64-bit big-endian message length in bits) and returns the digest
  // as the five state words in big-endian order. The object is spent afterwards.
  Sha1Digest finish() {
    const std::uint64_t bits = total_bytes_ * 8;
    buffer_[buffered_++] = 0x80;
    if (buffered_ > kBlock - 8) {  // no room for the length: it goes in one more block
      std::memset(buffer_.data() + buffered_, 0, kBlock - buffered_);
      compress(buffer_.data());
      buffered_ = 0;
    }
    std::memset(buffer_.data() + buffered_, 0, kBlock - 8 - buffered_);
    for (int i = 0; i < 8; ++i)
      buffer_[kBlock - 1 - i] = std::uint8_t(bits >> (8 * i));
    compress(buffer_.data());
    Sha1Digest out;
    for (int w = 0; w < 5; ++w) {
      for (int i = 0; i < 4; ++i)
        out[4 * w + i] = std::uint8_t(h_[w] >> (24 - 8 * i));
    }
    return out;
  }

 private:
  static constexpr std::size_t kBlock = 64;

  // One 512-bit block. The message schedule lives in a 16-word ring (W[t] only reaches back 16
  // words), which keeps it in registers and L1 instead of an 80-word array.
  void compress(const std::uint8_t* block) {
    std::uint32_t w[16];
    for (int t = 0; t < 16; ++t) {
      w[t] = std::uint32_t(block[4 * t]) << 24 | std::uint32_t(block[4 * t + 1]) << 16 |
             std::uint32_t(block[4 * t + 2]) << 8 | std::uint32_t(block[4 * t + 3]);
    }
    std::uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4];
    // The 80 rounds as four loops of 20, one per round function, so that no round branches on t.
    auto round = [&](int t, std::uint32_t f, std::uint32_t k) {
      if (t >= 16) {
        w[t & 15] = std::rotl(w[(t - 3) & 15] ^ w[(t - 8) & 15] ^ w[(t - 14) & 15] ^ w[t & 15], 1);
      }
      const std::uint32_t temp = std::rotl(a, 5) + f + e + k + w[t & 15];
      e = d;
      d = c;
      c = std::rotl(b, 30);
      b = a;
      a = temp;
    };
    for (int t = 0; t < 20; ++t)
      round(t, (b & c) | (~b & d), 0x5A827999u);  // Ch
    for (int t = 20; t < 40; ++t)
      round(t, b ^ c ^ d, 0x6ED9EBA1u);  // Parity
    for (int t = 40; t < 60; ++t)
      round(t, (b & c) | (b & d) | (c & d), 0x8F1BBCDCu);  // Maj
    for (int t = 60; t < 80; ++t)
      round(t, b ^ c ^ d, 0xCA62C1D6u);  // Parity
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
  }

  std::array<std::uint32_t, 5> h_{0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
  std::array<std::uint8_t, kBlock> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

inline Sha1Digest sha1(std::string_view text) {
  Sha1 h;
  h.update(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  return h.finish();
}

// The FIPS 180 examples: one block, an empty message, and a 56-byte message whose padding needs a
// second block (the path finish() takes when the length does not fit).
inline bool sha1_self_check() {
  auto hex = [](const Sha1Digest& d) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string s;
    for (std::uint8_t byte : d) {
      s += kDigits[byte >> 4];
      s += kDigits[byte & 15];
    }
    return s;
  };
  return hex(sha1("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d" &&
         hex(sha1("")) == "da39a3ee5e6b4b0d3255bfef95601890afd80709" &&
         hex(sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
             "84983e441c3bd26ebaae4aa1f95129e5e54670f1";
}

}  // namespace classic
