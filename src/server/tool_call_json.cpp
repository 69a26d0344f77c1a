// server/tool_call_json.cpp — see tool_call_json.h.
#include "server/tool_call_json.h"

#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/json/counting_iterator.h"

namespace fg::server {

namespace {

using nlohmann::json;

std::string dump_string(const std::string& s) {
  return json(s).dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
}

bool is_number_byte(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

class CallHandler : public nlohmann::json_sax<json> {
 public:
  CallHandler(std::string_view text, const size_t& read, CallShape shape, CallScan& out)
      : text_(text), read_(read), shape_(shape), out_(out) {}

  bool done = false;  // the root object closed

  bool null() override { return scalar("null"); }
  bool boolean(bool value) override { return scalar(value ? "true" : "false"); }
  bool number_integer(number_integer_t value) override { return number(json(value).dump()); }
  bool number_unsigned(number_unsigned_t value) override { return number(json(value).dump()); }
  bool number_float(number_float_t value, const string_t&) override { return number(json(value).dump()); }
  bool binary(binary_t&) override { return refuse("a binary value"); }

  bool string(string_t& value) override {
    if (in_arguments()) return scalar(dump_string(value));
    if (depth_ == 1 && member_ == Member::kName) {
      out_.name = value;
      return true;
    }
    return top_level_value(false);
  }

  bool start_object(std::size_t) override { return open(/*object=*/true); }
  bool start_array(std::size_t) override { return open(/*object=*/false); }
  bool end_object() override { return close("}"); }
  bool end_array() override { return close("]"); }

  bool key(string_t& name) override {
    if (in_arguments()) {
      separate();
      out_.arguments += dump_string(name);
      out_.arguments += ": ";
      return true;
    }
    if (depth_ != 1) return true;  // inside a member the call ignores
    if (name == "name") {
      if (seen_name_) return refuse("\"name\" twice");
      seen_name_ = true;
      member_ = Member::kName;
    } else if (name == "arguments" || name == "parameters") {
      if (seen_arguments_) return refuse("both \"arguments\" and \"parameters\", or one twice");
      seen_arguments_ = true;
      member_ = Member::kArguments;
    } else {
      member_ = Member::kOther;
    }
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    // The lexer counts the byte it failed on; past the text means it ran out, so more may fix it.
    if (position > text_.size()) {
      incomplete_ = true;
    } else {
      out_.error = ex.what();
    }
    return false;
  }

  bool incomplete() const { return incomplete_; }

 private:
  enum class Member { kNone, kName, kArguments, kOther };

  bool in_arguments() const { return arguments_depth_ > 0; }

  // Before a key in an object, or a value in an array, of the arguments: ", " unless first.
  void separate() {
    if (first_.back()) {
      first_.back() = false;
    } else {
      out_.arguments += ", ";
    }
  }

  // A value in the arguments. Values in objects follow their key; in arrays they are separated.
  void before_value() {
    if (!object_.back()) separate();
  }

  bool scalar(const std::string& text) {
    if (in_arguments()) {
      before_value();
      out_.arguments += text;
      return true;
    }
    return top_level_value(false);
  }

  bool number(const std::string& text) {
    // The lexer looked one byte past the number; at the end of the text there was none to see.
    const bool whole = read_ < text_.size() || !is_number_byte(text_.back());
    if (in_arguments()) {
      if (!whole) {
        incomplete_ = true;
        return false;
      }
      return scalar(text);
    }
    return top_level_value(false);
  }

  // A value met outside the arguments: the root, or a member of the root object.
  bool top_level_value(bool container) {
    if (depth_ == 0) {
      return container ? true : refuse("not a JSON object");
    }
    if (depth_ != 1) return true;  // nested inside a member the call ignores
    if (member_ == Member::kName) return refuse("\"name\" is not a string");
    if (member_ == Member::kArguments) return refuse("the arguments are not an object");
    return true;
  }

  bool open(bool object) {
    if (in_arguments()) {
      before_value();
      out_.arguments += object ? "{" : "[";
      object_.push_back(object);
      first_.push_back(true);
      ++depth_;
      return true;
    }
    const bool starts_arguments =
        shape_ == CallShape::kArguments ? depth_ == 0 && object : depth_ == 1 && member_ == Member::kArguments;
    if (starts_arguments) {
      if (!object) return refuse("the arguments are not an object");
      out_.arguments_started = true;
      out_.arguments += "{";
      object_.push_back(true);
      first_.push_back(true);
      ++depth_;
      arguments_depth_ = depth_;
      return true;
    }
    if (depth_ == 0 && !object) return refuse("not a JSON object");
    if (depth_ == 1 && member_ == Member::kName) return refuse("\"name\" is not a string");
    ++depth_;
    return true;
  }

  bool close(const char* bracket) {
    if (in_arguments()) {
      out_.arguments += bracket;
      object_.pop_back();
      first_.pop_back();
      if (depth_ == arguments_depth_) arguments_depth_ = 0;
    }
    --depth_;
    if (depth_ == 0) {
      done = true;
      out_.end = read_;
      return false;  // stop: what follows the object is the caller's
    }
    return true;
  }

  bool refuse(const char* why) {
    out_.error = why;
    return false;
  }

  std::string_view text_;
  const size_t& read_;
  CallShape shape_;
  CallScan& out_;
  int depth_ = 0;            // containers open
  int arguments_depth_ = 0;  // depth_ inside the arguments object; 0 outside it
  Member member_ = Member::kNone;
  bool seen_name_ = false, seen_arguments_ = false, incomplete_ = false;
  std::vector<bool> object_, first_;  // per container open in the arguments: an object? nothing in it yet?
};

}  // namespace

CallScan scan_call(std::string_view text, CallShape shape) {
  CallScan out;
  size_t read = 0;
  CallHandler handler(text, read, shape, out);
  CountingIterator begin(text.data(), &read), end(text.data() + text.size(), &read);
  json::sax_parse(begin, end, &handler, json::input_format_t::json, /*strict=*/false);
  if (handler.done) {
    if (shape == CallShape::kCall && !out.name) {
      out.state = CallScan::State::kMalformed;
      out.error = "no \"name\"";
    } else if (shape == CallShape::kCall && !out.arguments_started) {
      out.state = CallScan::State::kMalformed;
      out.error = "no \"arguments\" or \"parameters\"";
    } else {
      out.state = CallScan::State::kComplete;
    }
  } else {
    out.state = handler.incomplete() && out.error.empty() ? CallScan::State::kIncomplete : CallScan::State::kMalformed;
  }
  return out;
}

}  // namespace fg::server
