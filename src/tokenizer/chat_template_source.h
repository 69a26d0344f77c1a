// tokenizer/chat_template_source.h — what a --chat-template argument names, read the way vLLM
// reads it: a file's contents, or the argument itself when it is an inline template. A user
// moving from `vllm serve --chat-template ...` gets the same template from the same argument.
#pragma once

#include <string>

namespace fg {

// The contents of the file `argument` when it can be read; otherwise `argument` itself when it
// holds a character no file name is likely to ('{', '}' or a newline): an inline template.
// Anything else is a file that cannot be opened: fg::Error says so and why.
std::string chat_template_from_argument(const std::string& argument);

}  // namespace fg
