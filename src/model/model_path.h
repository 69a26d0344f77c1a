// model/model_path.h — from what a user names a model by to the folder that holds it: a path as
// it is, or a Hugging Face repo id ("meta-llama/Llama-3.2-1B") looked up in the local Hugging
// Face cache, the way huggingface_hub's offline mode finds a snapshot. Nothing is downloaded:
// fullgraph's users fetch models with huggingface-cli (or vLLM) and point at them.
//
// The cache layout (huggingface_hub's): <cache>/models--ORG--NAME/refs/<branch or tag> holds a
// commit hash; <cache>/models--ORG--NAME/snapshots/<commit>/ holds the files (symlinks to blobs).
#pragma once

#include <string>

namespace fg {

// The cache folder huggingface_hub uses, and why: $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
struct HfCacheDir {
  std::string path;
  std::string chosen_by;  // "from $HF_HUB_CACHE", "from $HF_HOME", "from $XDG_CACHE_HOME" or "the default"
};
HfCacheDir hf_hub_cache_dir();

// Whether `name` has the shape of a Hugging Face repo id: NAME or ORG/NAME, of letters, digits,
// '-', '_' and '.', neither starting nor ending with '-' or '.', without "--" or "..".
bool looks_like_repo_id(const std::string& name);

// The folder of the model (or tokenizer) `name`:
//  - an existing path (a folder, or a .gguf file): `name` itself (`revision` does not apply to a folder and is ignored,
//    with a warning, as vLLM does);
//  - a repo id: the cached snapshot of `revision` ("" means "main"): refs/<revision> names the
//    commit of a branch or tag; otherwise `revision` is taken as a commit hash, the snapshot's
//    own name.
// Throws fg::Error saying the folder does not exist (a name that cannot be a repo id), or that
// the repo is not in the Hugging Face cache, naming every path looked for. `what` names the
// thing in messages: "model" or "tokenizer".
std::string resolve_model_path(const std::string& name, const std::string& revision = "",
                               const std::string& what = "model");

// Whether `path` names a GGUF checkpoint: an existing regular file (or a link to one) whose name
// ends in ".gguf". A GGUF file is a whole model, and is accepted wherever a model folder is.
bool is_gguf_file(const std::string& path);

// Throws unless `dir` is a folder holding config.json, or a GGUF file, saying what is missing.
void check_model_folder(const std::string& dir);

}  // namespace fg
