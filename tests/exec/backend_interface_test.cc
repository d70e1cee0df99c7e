// The backend interface's size (issue 47 item 6: at most 15 entries, virtual functions and
// kernel-table entries together) and its kernel table's defaults (kernels.h: with_defaults).
// The entries are counted in the headers' text, so that a virtual function added anywhere in
// the backend classes' public headers fails here; the conformance suite runs a backend whose
// optional entries are the defaults (backend_conformance_cpu.cc).
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "muonplan/exec/backend.h"

using namespace muonplan::exec;

namespace {

std::string header(const std::string& name) {
  std::ifstream in(std::string(MUONPLAN_SOURCE_DIR) + "/executor/include/muonplan/exec/" + name);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The body of `class name ... {` up to its closing `};` at the start of a line.
std::string class_body(const std::string& text, const std::string& opening) {
  const size_t at = text.find(opening);
  REQUIRE(at != std::string::npos);
  const size_t end = text.find("\n};", at);
  REQUIRE(end != std::string::npos);
  return text.substr(at, end - at);
}

// Declarations of virtual functions other than the destructor, comments left out.
int virtual_functions(const std::string& body) {
  const std::regex comment("//[^\n]*");
  const std::string code = std::regex_replace(body, comment, "");
  const std::regex decl(R"(\bvirtual\s+[^~(;]*\()");
  return static_cast<int>(
      std::distance(std::sregex_iterator(code.begin(), code.end(), decl), std::sregex_iterator()));
}

// Members of struct KernelTable: declarations of function pointers, `(*name)(`.
int table_entries(const std::string& body) {
  const std::regex comment("//[^\n]*");
  const std::string code = std::regex_replace(body, comment, "");
  const std::regex entry(R"(\(\s*\*\s*\w+\s*\)\s*\()");
  return static_cast<int>(
      std::distance(std::sregex_iterator(code.begin(), code.end(), entry), std::sregex_iterator()));
}

void noop_gemm(Backend&, int64_t, bool, bool, int64_t, int64_t, int64_t, float, const MatrixBatch&,
               const MatrixBatch&, float, const MatrixBatch&) {}
void noop_sum_squares(Backend&, int64_t, int64_t, DType, const void*, float*) {}
void noop_scale(Backend&, int64_t, int64_t, const bf16*, const float*, bf16*) {}
void noop_elementwise(Backend&, const Elementwise&) {}

KernelTable required_only() {
  KernelTable t;
  t.gemm_bf16 = noop_gemm;
  t.sum_squares = noop_sum_squares;
  t.scale_bf16 = noop_scale;
  t.elementwise = noop_elementwise;
  return t;
}

}  // namespace

TEST_CASE("backend interface: at most 15 entries, counted in the headers", "[backend]") {
  const std::string backend_h = header("backend.h");
  const int virtuals = virtual_functions(class_body(backend_h, "class Backend {"));
  const int entries = table_entries(class_body(header("kernels.h"), "struct KernelTable {"));
  CHECK(virtuals == Backend::kVirtualEntries);
  CHECK(entries == kKernelTableEntries);
  CHECK(virtuals + entries == Backend::kEntries);
  CHECK(virtuals + entries <= 15);
  // The backends' public headers add no virtual function of their own: the CUDA backend's
  // device, stream and tile are data, the wrappers override Backend's entries only.
  for (const char* name : {"cuda_backend.h", "timed_backend.h", "cpu_async_backend.h"}) {
    INFO(name);
    CHECK(virtual_functions(header(name)) == 0);
  }
  // The count itself sees a virtual function and a table entry (not comments, not ~Backend).
  CHECK(virtual_functions("class A {\n  virtual ~A();\n  // virtual f()\n  virtual int f() const;\n"
                          "  virtual void g(int x) = 0;\n") == 2);
  CHECK(table_entries("  void (*f)(Backend& self, int x) = nullptr;\n  // (*g)(\n") == 1);
}

TEST_CASE("kernel table: null optional entries get the defaults, a null required one throws",
          "[backend]") {
  const KernelTable t = with_defaults(required_only());
  CHECK(t.gemm_bf16 == noop_gemm);
  CHECK(t.elementwise == noop_elementwise);
  CHECK(t.syrk_bf16 != nullptr);
  CHECK(t.scale_bf16_by != nullptr);
  CHECK(t.ns_scale != nullptr);
  CHECK(t.transpose_bf16 != nullptr);
  // A table's own optional entry is kept.
  KernelTable own = required_only();
  own.transpose_bf16 = [](Backend&, int64_t, int64_t, int64_t, const bf16*, bf16*) {};
  CHECK(with_defaults(own).transpose_bf16 == own.transpose_bf16);
  for (int missing = 0; missing < 4; ++missing) {
    KernelTable partial = required_only();
    if (missing == 0) partial.gemm_bf16 = nullptr;
    if (missing == 1) partial.sum_squares = nullptr;
    if (missing == 2) partial.scale_bf16 = nullptr;
    if (missing == 3) partial.elementwise = nullptr;
    CHECK_THROWS_AS(with_defaults(partial), std::logic_error);
  }
}

TEST_CASE("backend interface: the CPU backends report their facts through describe()",
          "[backend]") {
  const std::unique_ptr<Backend> cpu = make_cpu_backend(CpuGemm::openblas);
  const BackendInfo info = cpu->describe();
  CHECK(info.name == "cpu");
  CHECK(info.host_timed);
  CHECK(info.gemm_path.library == "openblas");
  CHECK(cpu->name() == "cpu");
}
