// tokenizer/chat_template_source.cpp — see chat_template_source.h.
#include "tokenizer/chat_template_source.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"

namespace fg {

std::string chat_template_from_argument(const std::string& argument) {
  FG_CHECK(!argument.empty(), "--chat-template is empty");
  std::error_code ec;
  std::string why = "it is a folder";
  if (!std::filesystem::is_directory(argument, ec)) {
    std::ifstream in(argument, std::ios::binary);
    if (in.good()) return std::string(std::istreambuf_iterator<char>(in), {});
    why = std::strerror(errno);
  }
  // vLLM's rule (chat_utils._load_chat_template): an argument that cannot be opened is taken as
  // the template itself if it holds one of the characters that every Jinja template needs.
  if (argument.find_first_of("{}\n") != std::string::npos) return argument;
  fail("--chat-template {}: looks like a file name, but the file cannot be read ({}); an inline template must "
       "hold Jinja markup ('{{' and '}}')",
       argument, why);
}

}  // namespace fg
