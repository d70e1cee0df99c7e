#include "muonplan/base/json_bounds.h"

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "muonplan/base/error.h"

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

namespace {

// The object or array being read, and how the next value in it is named.
struct Frame {
  bool object = false;
  std::string key;                        // object: the key of the value being read
  size_t count = 0;                       // array: values so far
  std::map<std::string, SourceLoc> keys;  // object: each key and where it was given
};

// "a.b[3]" for the value the innermost frame holds under `key`.
std::string field_of(const std::vector<Frame>& stack, const std::string& key) {
  std::string f;
  for (size_t i = 0; i + 1 < stack.size(); ++i) {
    if (stack[i].object) {
      f += (f.empty() ? "" : ".") + stack[i].key;
    } else {
      f += "[" + std::to_string(stack[i].count - 1) + "]";
    }
  }
  return f.empty() ? key : f + "." + key;
}

void count_value(std::vector<Frame>& stack) {
  if (!stack.empty() && !stack.back().object) ++stack.back().count;
}

}  // namespace

std::vector<DuplicateKey> find_duplicate_keys(const std::string& text, const std::string& path) {
  std::vector<DuplicateKey> out;
  std::vector<Frame> stack;
  int line = 1;
  size_t line_start = 0;
  const size_t n = text.size();
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  for (size_t i = 0; i < n;) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = ++i;
    } else if (c == '{' || c == '[') {
      count_value(stack);
      stack.push_back(Frame{c == '{', "", 0, {}});
      ++i;
    } else if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
      ++i;
    } else if (c == '"') {
      const size_t start = i++;
      while (i < n && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
      const size_t end = std::min(i, n - 1);  // the closing quote
      i = end + 1;
      size_t j = i;
      while (j < n && is_space(text[j])) ++j;
      if (j < n && text[j] == ':' && !stack.empty() && stack.back().object) {
        std::string key;
        try {
          key = nlohmann::json::parse(text.substr(start, end - start + 1)).get<std::string>();
        } catch (const nlohmann::json::exception&) {
          key = text.substr(start + 1, end - start - 1);
        }
        const SourceLoc at{path, line, int(start - line_start) + 1};
        Frame& top = stack.back();
        const auto [it, fresh] = top.keys.emplace(key, at);
        if (!fresh) out.push_back({field_of(stack, key), it->second, at});
        top.key = key;
      } else {
        count_value(stack);
      }
    } else if (is_space(c) || c == ',' || c == ':') {
      ++i;
    } else {  // a number, true, false or null
      count_value(stack);
      while (i < n && !is_space(text[i]) &&
             std::string_view(",:[]{}\"").find(text[i]) == std::string_view::npos)
        ++i;
    }
  }
  return out;
}

void refuse_duplicate_keys(const std::string& text, const std::string& path) {
  const std::vector<DuplicateKey> dups = find_duplicate_keys(text, path);
  if (dups.empty()) return;
  const DuplicateKey& d = dups.front();
  throw InputError(d.second, d.field,
                   "given twice, at lines " + std::to_string(d.first.line) + " and " +
                       std::to_string(d.second.line));
}

}  // namespace muonplan
