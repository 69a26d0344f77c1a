// sampling/philox.h — Philox4x32-10, the counter-based random number generator of token sampling,
// one definition compiled for both the host (g++) and the device (nvcc).
//
// Philox (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011) maps a 128-bit
// counter and a 64-bit key to 128 random bits with no state, so a request's random draw is a pure
// function of (seed, step): it never depends on which row the request occupies, on its batch
// neighbours, or on whether the step runs on the CPU or the GPU. The known-answer vectors of
// Random123 (tests/kat_vectors) are checked in tests/test_sampling.cpp.
#pragma once

#include <cstdint>

// Functions shared by host and device code; plain inline functions for g++.
#ifndef FG_SAMPLING_HD
#if defined(__CUDACC__)
#define FG_SAMPLING_HD __host__ __device__ __forceinline__
#else
#define FG_SAMPLING_HD inline
#endif
#endif

namespace fg::sampling {

struct Philox4x32 {
  uint32_t v[4];
};

namespace philox_detail {

inline constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // golden ratio, sqrt(3) - 1

FG_SAMPLING_HD uint32_t mulhi(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

}  // namespace philox_detail

// Philox4x32 with 10 rounds: the round function of Random123's philox4x32_R, with the key bumped
// by the Weyl constants between rounds.
FG_SAMPLING_HD Philox4x32 philox4x32_10(Philox4x32 ctr, uint32_t key0, uint32_t key1) {
  using namespace philox_detail;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += kWeyl0;
      key1 += kWeyl1;
    }
    const uint32_t hi0 = mulhi(kMul0, ctr.v[0]), lo0 = kMul0 * ctr.v[0];
    const uint32_t hi1 = mulhi(kMul1, ctr.v[2]), lo1 = kMul1 * ctr.v[2];
    ctr = Philox4x32{{hi1 ^ ctr.v[1] ^ key0, lo1, hi0 ^ ctr.v[3] ^ key1, lo0}};
  }
  return ctr;
}

// Streams of one request's counter space: word 1 of the counter tells uses apart so that a later
// feature (e.g. speculative decoding) draws from its own stream without shifting this one.
inline constexpr uint32_t kSampleStream = 0;

// The 64 random bits of token sampling for (seed, step): key = seed, counter = (0, stream, step).
FG_SAMPLING_HD uint64_t sampling_random_bits(uint64_t seed, uint64_t step) {
  const Philox4x32 out =
      philox4x32_10(Philox4x32{{0u, kSampleStream, static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32)}},
                    static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return static_cast<uint64_t>(out.v[0]) | (static_cast<uint64_t>(out.v[1]) << 32);
}

}  // namespace fg::sampling
