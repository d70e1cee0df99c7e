// The keyword functions of the Python module (keywords.cc).
#pragma once

#include <pybind11/pybind11.h>

#include <string>

namespace muonplan {

// `message` with each --FLAG of a plan option (and --model, --topology) written as the Python
// keyword that stands for it: "--lr: must be ..." -> "lr: must be ...".
std::string keyword_message(const std::string& message);

// A Python function `name` calling `impl(*fixed, **options)`, with a signature of the `fixed`
// parameters ((name, default) pairs) and one keyword-only parameter per plan option (report's
// when !search), and `doc` followed by every option's type, default and help.
pybind11::object keyword_function(const char* name, pybind11::object impl, pybind11::list fixed,
                                  bool search, const std::string& doc);

}  // namespace muonplan
