// "did you mean ...?" for a mistyped name: the closest of the names that are known, by edit
// distance (insertions, deletions, substitutions, and swaps of two neighbours, case
// ignored), when it is close enough to be the name meant. One rule for flags, model names
// and HF ids.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace muonplan {

// Optimal string alignment distance of a and b, case ignored.
inline size_t edit_distance(const std::string& a, const std::string& b) {
  auto low = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = low(a[i - 1]) == low(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && low(a[i - 1]) == low(b[j - 2]) && low(a[i - 2]) == low(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

// Names longer than this get no suggestion: a mistyped name is short, and the distance costs
// |word| x |name| (a 3 MB model name took 25-35 s and 800 MB).
constexpr size_t kMaxSuggestedWordChars = 256;

// The known name closest to `word` within a third of its length (at most 3 edits), or "".
// Ties go to the first in `known`. Names whose lengths differ by more than the limit are
// skipped unmeasured (the distance is at least the difference).
inline std::string closest_name(const std::string& word, const std::vector<std::string>& known) {
  if (word.size() > kMaxSuggestedWordChars) return "";
  const size_t limit = std::min<size_t>(3, std::max<size_t>(1, word.size() / 3));
  std::string best;
  size_t best_d = limit + 1;
  for (const std::string& k : known) {
    if (k.size() > word.size() + limit || word.size() > k.size() + limit) continue;
    const size_t d = edit_distance(word, k);
    if (d < best_d) best = k, best_d = d;
  }
  return best;
}

// The model names `word` may have meant, best first (issue 50 item 7): names it is the start
// of, at a separator ("qwen3-30b" -> qwen3-30b-a3b; "Qwen/Qwen3-30B" -> Qwen/Qwen3-30B-A3B),
// shortest first, at most kMaxSuggestedNames; else the closest name of its family (the part
// before the first '-' after any "org/": "qwen3-32b" looks among qwen3-*); else the closest
// of all. Edit distance alone ranked qwen3-4b first for qwen3-30b (2 edits against 4).
constexpr size_t kMaxSuggestedNames = 4;

inline std::string lower_text(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

inline std::string model_family(const std::string& name) {
  const std::string base = lower_text(name.substr(name.find('/') + 1));
  return base.substr(0, base.find('-'));
}

inline std::vector<std::string> closest_model_names(const std::string& word,
                                                    const std::vector<std::string>& known) {
  if (word.empty() || word.size() > kMaxSuggestedWordChars) return {};
  const std::string w = lower_text(word);
  std::vector<std::string> starts;
  for (const std::string& k : known) {
    const std::string l = lower_text(k);
    if (l.size() > w.size() && l.compare(0, w.size(), w) == 0 &&
        std::string("-_./").find(l[w.size()]) != std::string::npos &&
        std::find(starts.begin(), starts.end(), k) == starts.end())
      starts.push_back(k);
  }
  std::stable_sort(starts.begin(), starts.end(),
                   [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
  if (starts.size() > kMaxSuggestedNames) starts.resize(kMaxSuggestedNames);
  if (!starts.empty()) return starts;
  std::vector<std::string> family;
  for (const std::string& k : known) {
    if (model_family(k) == model_family(word)) family.push_back(k);
  }
  std::string best = closest_name(word, family);
  if (best.empty()) best = closest_name(word, known);
  if (best.empty()) return {};
  return {best};
}

}  // namespace muonplan
