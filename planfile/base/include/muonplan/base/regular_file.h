// Inputs too large for read_input_file (io.h), read by stream (checkpoint rank files), are held
// to its rule on what a file may be: a regular file, checked before the open, which would block
// on a FIFO until a writer came (docs/reliability.md, "Input and output files").
#pragma once

#include <string>

namespace muonplan {

// InputError "PATH: FIELD: is a FIFO, not a regular file" (a directory, a device, a socket; or
// "cannot be read" when missing) unless `path` is a regular file. Implemented in io.cc, beside
// read_input_file, with the same messages.
void check_regular_input(const std::string& path, const std::string& field = "file");

}  // namespace muonplan
