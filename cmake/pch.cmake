# Precompiled headers (MUONPLAN_PCH; the sanitizer build turns it on: docs/reliability.md,
# "CI's time"). nlohmann/json.hpp is the costliest header we include: under that build's flags
# (-O1 -g1, ASan + UBSan) a file with one use of it took 6.85 s to compile, a file of <string>,
# <vector>, <map> and <algorithm> 0.65 s, and 123 of its 219 files include it, most through our
# own headers (base/io.h, planfile/plan_file.h). Catch2's single header is in every test file.
# Each target with many such files parses them once, into its own precompiled header (gcc needs
# the flags of the files that use it, so targets do not share one): the sanitizer build's
# compiler time went from 1677 s to 1382 s (the rest is code generation, which this cannot share).
# Off elsewhere: the release build checks that each file includes what it uses, and GCC 12 at -O3
# inlines differently with it and reports false -Wstringop-overflow and -Warray-bounds inside
# std::string's operator+ in five files.
option(MUONPLAN_PCH "Precompile nlohmann/json.hpp, the common std headers and Catch2" OFF)

# muonplan_pch(TARGET [CATCH]): TARGET's C++ files compile against the precompiled headers;
# CATCH adds Catch2's (test binaries only). TARGET must have C++ sources only, and call this after
# setting its files' COMPILE_OPTIONS.
function(muonplan_pch target)
  if(NOT MUONPLAN_PCH)
    return()
  endif()
  cmake_parse_arguments(arg "CATCH" "" "" ${ARGN})
  set(headers <nlohmann/json.hpp> <algorithm> <cstdint> <functional> <map> <memory> <optional>
              <string> <vector>)
  if(arg_CATCH)
    list(APPEND headers <catch2/catch.hpp>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
  # A file with flags of its own (the executor's AVX2 and AVX-512 kernels) compiles without:
  # gcc refuses a precompiled header made with other instruction-set flags.
  get_target_property(sources ${target} SOURCES)
  foreach(src IN LISTS sources)
    get_source_file_property(options ${src} COMPILE_OPTIONS)
    if(options)
      set_source_files_properties(${src} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()
