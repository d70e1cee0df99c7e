// Where the bundled data lives (models/, topologies/, reports/report.py, the published
// calibration figures): found relative to the binary that holds this code, so an installed
// copy (PREFIX/bin/muonplan, PREFIX/lib/.../muonplan*.so with PREFIX/share/muonplan) and a build
// tree (CMake links BUILD/share/muonplan to the sources) work alike, and no build or source
// path is compiled in. MUONPLAN_DATA_DIR overrides it.
#pragma once

#include <string>

namespace muonplan {

// The data directory, or throws std::runtime_error saying where it looked.
std::string data_dir();
// data_dir() + "/" + relative.
std::string data_path(const std::string& relative);

}  // namespace muonplan
