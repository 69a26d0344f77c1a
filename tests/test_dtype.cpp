// tests/test_dtype.cpp — convert_to_bf16, which the loader uses to run F16 and F32 checkpoints on
// the CUDA backend: round to nearest even (ties to even), infinities and NaN kept, F16 subnormals
// and the F16 maximum exact in and correctly rounded out. Expected bit patterns are worked out from
// the IEEE formats in the comments, not produced by the code under test. Also the e4m3 conversions
// of FP8 checkpoints and activation rounding, checked exhaustively against the format's definition.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace fg {
namespace {

std::vector<uint16_t> from_f32(const std::vector<float>& values) {
  std::vector<uint16_t> out(values.size());
  convert_to_bf16(values.data(), DType::kF32, out.data(), static_cast<int64_t>(values.size()));
  return out;
}

std::vector<uint16_t> from_f16(const std::vector<uint16_t>& bits) {
  std::vector<uint16_t> out(bits.size());
  convert_to_bf16(bits.data(), DType::kF16, out.data(), static_cast<int64_t>(bits.size()));
  return out;
}

TEST(ConvertToBf16, F32RoundsToNearestEven) {
  const float inf = std::numeric_limits<float>::infinity();
  // 1 + 2^-8 lies halfway between bf16 1.0 (0x3F80) and 1 + 2^-7 (0x3F81): ties go to the even
  // 0x3F80; 1 + 3 * 2^-8 lies halfway between 0x3F81 and 0x3F82: to the even 0x3F82; the float
  // just above 1 + 2^-8 rounds up.
  const std::vector<uint16_t> got = from_f32(
      {1.0f, 1.00390625f, 1.01171875f, std::nextafter(1.00390625f, 2.0f), -2.0f, -0.0f, inf, -inf, 3.0e38f});
  const std::vector<uint16_t> want = {0x3F80, 0x3F80, 0x3F82, 0x3F81, 0xC000, 0x8000, 0x7F80, 0xFF80,
                                      // 3e38 = 1.763 * 2^127: mantissa 0.763 * 128 = 97.7 -> 98 = 0x62
                                      0x7F62};
  EXPECT_EQ(got, want);
  const uint16_t nan = from_f32({std::numeric_limits<float>::quiet_NaN()})[0];
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x007F, 0);
}

TEST(ConvertToBf16, F16IsExactThenRoundedOnce) {
  // F16 1.0 (0x3C00) -> 0x3F80. 0x3C01 = 1 + 2^-10, under half a bf16 ulp (2^-8): down to 1.0.
  // 0x3C05 = 1 + 5 * 2^-10 = 1 + 1.25 * 2^-8: over the half, up to 0x3F81.
  // 0x7BFF = 65504 = (2 - 2^-10) * 2^15: rounds up to 2^16 = 0x4780.
  // 0x0001 = 2^-24 (the smallest subnormal): exponent 127 - 24 = 103 = 0x67 -> 0x3380.
  // 0x7C00 = inf, 0xFC00 = -inf, 0x8000 = -0.
  const std::vector<uint16_t> got = from_f16({0x3C00, 0x3C01, 0x3C05, 0x7BFF, 0x0001, 0x7C00, 0xFC00, 0x8000});
  const std::vector<uint16_t> want = {0x3F80, 0x3F80, 0x3F81, 0x4780, 0x3380, 0x7F80, 0xFF80, 0x8000};
  EXPECT_EQ(got, want);
  const uint16_t nan = from_f16({0x7E00})[0];
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x007F, 0);
}

TEST(ConvertToBf16, Bf16IsCopiedAndIntegersAreRefused) {
  const std::vector<uint16_t> bits = {0x3F80, 0x1234, 0xFFFF};
  std::vector<uint16_t> out(bits.size());
  convert_to_bf16(bits.data(), DType::kBF16, out.data(), 3);
  EXPECT_EQ(out, bits);
  const std::vector<int32_t> ints = {1, 2};
  EXPECT_THROW(convert_to_bf16(ints.data(), DType::kI32, out.data(), 2), Error);
}

// Every finite e4m3 code is a float that converts back to itself; between two neighbours the
// midpoint goes to the even code (round to nearest even) and anything off it to the nearer one.
// That pins float_to_e4m3 down wherever torch's .to(torch.float8_e4m3fn) is defined (|x| <= 448).
TEST(E4M3, EveryCodeRoundTripsAndMidpointsRoundToEven) {
  for (int code = 0; code < 256; ++code) {
    const auto bits = static_cast<uint8_t>(code);
    const float value = e4m3_to_float(bits);
    if ((code & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(value)) << code;
      continue;
    }
    EXPECT_EQ(float_to_e4m3(value), bits) << code << " = " << value;
  }
  for (int code = 0; code < 0x7e; ++code) {
    const float lo = e4m3_to_float(static_cast<uint8_t>(code));
    const float hi = e4m3_to_float(static_cast<uint8_t>(code + 1));
    const float mid = (lo + hi) / 2;  // exact: e4m3 spacings are far above fp32's
    const int even = code % 2 == 0 ? code : code + 1;
    EXPECT_EQ(float_to_e4m3(mid), even) << "between " << lo << " and " << hi;
    EXPECT_EQ(float_to_e4m3(-mid), even | 0x80) << "between " << -lo << " and " << -hi;
    EXPECT_EQ(float_to_e4m3(std::nextafter(mid, lo)), code) << mid;
    EXPECT_EQ(float_to_e4m3(std::nextafter(mid, hi)), code + 1) << mid;
  }
}

TEST(E4M3, KnownValuesAndSaturation) {
  EXPECT_EQ(e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(e4m3_to_float(0x08), 0x1p-6f);  // smallest normal
  EXPECT_EQ(e4m3_to_float(0x01), 0x1p-9f);  // smallest subnormal
  EXPECT_EQ(e4m3_to_float(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_float(0xc4), -3.0f);
  EXPECT_EQ(float_to_e4m3(1000.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3(-448.5f), 0xfe);
  EXPECT_EQ(float_to_e4m3(0x1p-11f), 0x00);
  EXPECT_EQ(float_to_e4m3(-0.0f), 0x80);
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::quiet_NaN()) & 0x7f, 0x7f);
  EXPECT_EQ(dtype_size(DType::kF8E4M3), 1u);
  EXPECT_EQ(parse_dtype("F8_E4M3"), DType::kF8E4M3);
  EXPECT_EQ(parse_dtype("F8_E5M2"), std::nullopt);
}

}  // namespace
}  // namespace fg
