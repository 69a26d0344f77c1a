// core/json/counting_iterator.h — an input iterator over text that counts the bytes read through
// it. nlohmann-json's SAX callbacks carry no position; fed through this iterator, the count says
// where the lexer stands when a callback runs: through the last byte of what it reports (numbers:
// one byte further, when there is one). Used for byte offsets in errors (strict_json.cpp) and for
// finding where a streamed tool call's JSON ends (server/tool_call_json.cpp).
#pragma once

#include <cstddef>
#include <iterator>

namespace fg {

class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* at, size_t* read) : at_(at), read_(read) {}
  reference operator*() const { return *at_; }
  CountingIterator& operator++() {
    ++at_;
    ++*read_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator before = *this;
    ++*this;
    return before;
  }
  bool operator==(const CountingIterator& other) const { return at_ == other.at_; }
  bool operator!=(const CountingIterator& other) const { return at_ != other.at_; }

 private:
  const char* at_;
  size_t* read_;
};

}  // namespace fg
