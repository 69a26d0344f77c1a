// tokenizer/builtin_tokenizer.cpp — the built-in model's chat template.
#include "tokenizer/builtin_tokenizer.h"

namespace fg {

const char* builtin_chat_template() {
  return "{{ bos_token }}{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n"
         "{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}";
}

}  // namespace fg
