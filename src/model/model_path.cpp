// model/model_path.cpp — model names to folders (see model_path.h).
#include "model/model_path.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "core/log.h"

namespace fg {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

bool repo_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.';
}

bool repo_part(const std::string& part) {
  if (part.empty() || part.size() > 96) return false;
  for (char c : part)
    if (!repo_char(c)) return false;
  const auto edge = [](char c) { return c == '-' || c == '.'; };
  return !edge(part.front()) && !edge(part.back()) && part.find("--") == std::string::npos &&
         part.find("..") == std::string::npos;
}

// A branch, tag or commit: a refs file name may hold '/' (e.g. "refs/pr/1") but never climb out.
bool safe_revision(const std::string& revision) {
  if (revision.empty() || revision.front() == '/' || revision.back() == '/') return false;
  for (const fs::path& part : fs::path(revision))
    if (part == ".." || part == ".") return false;
  return true;
}

std::string read_first_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\n')) line.pop_back();
  return line;
}

std::string quoted_list(const std::vector<std::string>& paths) {
  std::string out;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (i > 0) out += i + 1 == paths.size() ? " and " : ", ";
    out += paths[i];
  }
  return out;
}

}  // namespace

HfCacheDir hf_hub_cache_dir() {
  if (const std::string hub = env("HF_HUB_CACHE"); !hub.empty()) return {hub, "from $HF_HUB_CACHE"};
  if (const std::string home = env("HF_HOME"); !home.empty())
    return {(fs::path(home) / "hub").string(), "from $HF_HOME"};
  if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty())
    return {(fs::path(xdg) / "huggingface" / "hub").string(), "from $XDG_CACHE_HOME"};
  return {(fs::path(env("HOME")) / ".cache" / "huggingface" / "hub").string(), "the default"};
}

bool looks_like_repo_id(const std::string& name) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return repo_part(name);
  return repo_part(name.substr(0, slash)) && repo_part(name.substr(slash + 1));
}

std::string resolve_model_path(const std::string& name, const std::string& revision, const std::string& what) {
  FG_CHECK(!name.empty(), "no {} given", what);
  std::error_code ec;
  if (fs::exists(name, ec)) {
    if (!revision.empty())
      log::warning("--revision {} applies to models in the Hugging Face cache; ignored for the folder {}", revision,
                   name);
    return name;
  }
  // A path that cannot be a repo id is a folder that is missing, and is called that; "x.gguf" has
  // the shape of a repo id but is meant as a file.
  FG_CHECK(!name.ends_with(".gguf"), "the {} file {} does not exist", what, name);
  FG_CHECK(looks_like_repo_id(name), "the {} folder {} does not exist", what, name);

  const std::string rev = revision.empty() ? "main" : revision;
  FG_CHECK(safe_revision(rev), "--revision '{}' is not a branch, tag or commit name", rev);
  const HfCacheDir cache = hf_hub_cache_dir();
  std::string flat = name;  // "org/name" -> "models--org--name", huggingface_hub's folder name
  for (size_t i = flat.find('/'); i != std::string::npos; i = flat.find('/', i)) flat.replace(i, 1, "--");
  const fs::path repo = fs::path(cache.path) / ("models--" + flat);
  const fs::path ref = repo / "refs" / rev;
  std::vector<std::string> looked_for = {ref.string()};
  fs::path snapshot = repo / "snapshots" / rev;
  if (fs::is_regular_file(ref, ec)) {
    const std::string commit = read_first_line(ref);
    FG_CHECK(safe_revision(commit), "{}: holds '{}', not a commit hash", ref.string(), commit);
    snapshot = repo / "snapshots" / commit;
  }
  looked_for.push_back(snapshot.string());
  FG_CHECK(fs::is_directory(snapshot, ec),
           "{} '{}' is not a local folder, and not in the Hugging Face cache: looked for {} (cache folder {}: {}). "
           "fullgraph does not download; fetch it first (e.g. `huggingface-cli download {}`), or set HF_HUB_CACHE or "
           "HF_HOME to the cache that holds it",
           what, name, quoted_list(looked_for), cache.path, cache.chosen_by, name);
  return snapshot.string();
}

bool is_gguf_file(const std::string& path) {
  std::error_code ec;
  return path.ends_with(".gguf") && fs::is_regular_file(path, ec);
}

void check_model_folder(const std::string& dir) {
  std::error_code ec;
  if (is_gguf_file(dir)) return;
  FG_CHECK(fs::exists(dir, ec), "the model folder {} does not exist", dir);
  FG_CHECK(fs::is_directory(dir, ec), "the model path {} is not a folder (a model is a folder holding config.json, or a .gguf file)",
           dir);
  FG_CHECK(fs::is_regular_file(fs::path(dir) / "config.json", ec),
           "the model folder {} has no config.json (is it a Hugging Face checkpoint folder?)", dir);
}

}  // namespace fg
