#include "muonplan/json_bounds.h"

#include <vector>

#include "muonplan/error.h"

namespace muonplan {
namespace {

[[noreturn]] void refuse(const std::string& text, size_t offset, const std::string& path,
                         const std::string& message) {
  throw InputError(text_location(text, offset, path), "json", message);
}

}  // namespace

SourceLoc text_location(const std::string& text, size_t offset, const std::string& path) {
  SourceLoc loc{path, 1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    loc.col = text[i] == '\n' ? 1 : loc.col + 1;
    loc.line += text[i] == '\n';
  }
  return loc;
}

void check_json_bounds(const std::string& text, const std::string& path) {
  // Per open container: elements so far in an array (commas + 1), -1 for an object.
  std::vector<int64_t> open;
  int64_t values = 1;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character, '"' too
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      open.push_back(c == '[' ? 1 : -1);
      if (open.size() > size_t(kMaxJsonDepth)) {
        refuse(text, i, path,
               "nested deeper than " + std::to_string(kMaxJsonDepth) +
                   " levels; no muonplan input nests more than a few");
      }
    } else if ((c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
    } else if (c == ',') {
      ++values;
      if (!open.empty() && open.back() > 0 && ++open.back() > kMaxJsonArrayElements) {
        refuse(text, i, path,
               "an array of more than " + std::to_string(kMaxJsonArrayElements) +
                   " elements; no muonplan input holds one");
      }
    }
    if (values > kMaxJsonValues) {
      refuse(text, i, path,
             "more than " + std::to_string(kMaxJsonValues) +
                 " values; no muonplan input holds as many");
    }
  }
}

}  // namespace muonplan
