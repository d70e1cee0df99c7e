// A partial selection and a maximum shared by the owner strategies (owners.cc, owners_balanced.cc).
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

namespace muonplan::detail {

// Indices of the n largest key(i), largest first, lower index first among equals: a partial
// selection, so a step of the local search costs O(ranks), not a sort of them.
template <class Key>
std::vector<int> top_n(int size, size_t n, Key key) {
  std::vector<int> idx(size);
  std::iota(idx.begin(), idx.end(), 0);
  n = std::min<size_t>(n, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + n, idx.end(), [&](int a, int b) {
    const double ka = key(a), kb = key(b);
    return ka != kb ? ka > kb : a < b;
  });
  idx.resize(n);
  return idx;
}

// Largest entry of a non-empty v.
inline double max_of(const std::vector<double>& v) {
  return *std::max_element(v.begin(), v.end());
}

}  // namespace muonplan::detail
