#!/usr/bin/env python3
"""Fails naming every function in the project's sources that is over the length limit.

Functions a reader can hold (issue #23): no C++ function (lambdas included) in planner/,
planfile/, executor/, tools/, cli/, bench/, python/, fuzz/ or tests/ (tests are code a reader
holds too: issue 37 item 6) may be over MAX_FUNCTION_LINES lines, counted from
the line of its name to the line of its closing brace, nor any Python function there or in
reports/; no source file there may be over MAX_FILE_LINES lines.

The C++ side is a small brace matcher, not a parser: it relies on the code being
clang-format'd (one definition's head before its `{`) and needs no ctags, which CI lacks.
Comments, string and character literals and preprocessor lines are blanked first, so braces
inside them do not count.

    function_length.py [SOURCE_DIR]      (default: the repository holding this script)
"""

import ast
import pathlib
import re
import sys

MAX_FUNCTION_LINES = 100
# The aim is ~500 lines a file; the check leaves room over it so that one more function does
# not fail the build, while a file growing back to twice a topic's size does.
MAX_FILE_LINES = 600

CXX_DIRS = ("planner", "planfile", "executor", "tools", "cli", "bench", "tests", "python", "fuzz")
PYTHON_DIRS = CXX_DIRS + ("reports",)
CXX_SUFFIXES = (".cc", ".h", ".cu", ".cuh")

# Functions over the limit that someone is rewriting now: "path:name" -> why it may stay.
# An entry that no longer matches a long function fails the check, so the list cannot rot.
ALLOWED = {
    "planner/src/prime_rl/trainer_keys.cc:trainer_keys": "a data table: one row a key, no logic",
}

CONTROL_WORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "alignof", "decltype"}
# What may stand between a function's `)` and its `{`.
QUALIFIERS = re.compile(
    r"^(\s|const\b|noexcept\b|override\b|final\b|mutable\b|constexpr\b|volatile\b|&|"
    r"->\s*[\w:<>,\s*&]+)*$")


def blank_non_code(text):
    """Returns text with comments, literals and preprocessor lines turned into spaces; newlines
    stay so that offsets keep their line numbers."""
    out = list(text)
    i, n = 0, len(text)

    def blank(start, end):
        for k in range(start, end):
            if out[k] != "\n":
                out[k] = " "

    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            # A directive, with its backslash continuations.
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            blank(i, j)
            i = j
            continue
        if c == "\n":
            at_line_start = True
            i += 1
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and not is_ident_char(text, i - 1):
            open_paren = text.find("(", i + 2)
            delim = text[i + 2:open_paren]
            j = text.find(")" + delim + '"', open_paren)
            j = n if j < 0 else j + len(delim) + 2
            blank(i, j)
            i = j
        elif c == '"' or (c == "'" and not is_digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def is_ident_char(text, i):
    return i >= 0 and (text[i].isalnum() or text[i] == "_")


def is_digit_separator(text, i):
    """1'000'000: a quote inside a number token."""
    j = i - 1
    while j >= 0 and is_ident_char(text, j):
        j -= 1
    return j + 1 < i and text[j + 1].isdigit()


def matching_open(code, close_at, open_char, close_char):
    depth = 0
    for k in range(close_at, -1, -1):
        if code[k] == close_char:
            depth += 1
        elif code[k] == open_char:
            depth -= 1
            if depth == 0:
                return k
    return -1


def word_before(code, end):
    """The identifier (with :: qualifiers and ~) ending just before `end`, and its start."""
    k = end
    while k > 0 and code[k - 1].isspace():
        k -= 1
    start = k
    while start > 0 and (is_ident_char(code, start - 1) or code[start - 1] in ":~"):
        start -= 1
    return code[start:k], start


def function_head(code, brace):
    """For a `{` at `brace`, the (name, offset of the name) of the function whose body it opens,
    or None when it opens something else (a class, a namespace, a control block, an
    initializer)."""
    return head_ending_at(code, skip_space_back(code, brace), True)


def skip_space_back(code, k):
    while k > 0 and code[k - 1].isspace():
        k -= 1
    return k


def head_ending_at(code, k, may_be_init_list):
    """The function head whose text ends at offset k (its `)`, qualifiers, or a constructor's
    initializer list), as function_head."""
    before = code[:k]
    close = before.rfind(")")
    if close >= 0 and QUALIFIERS.match(before[close + 1:]):
        open_ = matching_open(code, close, "(", ")")
        if open_ < 0:
            return None
        name, at = word_before(code, open_)
        if name in CONTROL_WORDS:
            return None
        if name == "":
            # A lambda's parameter list follows its capture: `[&](int i) {`.
            j = skip_space_back(code, open_)
            if j > 0 and code[j - 1] == "]":
                return lambda_head(code, j - 1)
            return None
        if name.endswith("operator") or re.search(r"operator\s*\W+$", code[max(0, at - 12):open_]):
            return ("operator", at)
        if may_be_init_list:
            ctor = init_list_head(code, k)
            if ctor is not None:
                return ctor
        if looks_like_construction(code, at):
            return None
        return (name, at)
    if k > 0 and code[k - 1] == "]":
        return lambda_head(code, k - 1)
    if k > 0 and code[k - 1] == "}" and may_be_init_list:
        return init_list_head(code, k)
    return None


def init_list_head(code, k):
    """A constructor whose initializer list ends at k: `Foo::Foo(int a) : a_(a), b_{a}`. Walks
    back over the `member(...)` and `member{...}` items to the `:`, then reads the head before
    it; None when the text is no such list."""
    pos = k
    while True:
        pos = skip_space_back(code, pos)
        if pos == 0 or code[pos - 1] not in ")}":
            return None
        pair = "(" if code[pos - 1] == ")" else "{"
        open_ = matching_open(code, pos - 1, pair, ")" if pair == "(" else "}")
        if open_ < 0:
            return None
        member, at = word_before(code, open_)
        if not member or member.endswith(":"):
            return None
        pos = skip_space_back(code, at)
        if pos > 0 and code[pos - 1] == ",":
            pos -= 1
            continue
        if pos > 0 and code[pos - 1] == ":" and not code.startswith("::", pos - 2):
            return head_ending_at(code, skip_space_back(code, pos - 1), False)
        return None


def lambda_head(code, close_bracket):
    open_ = matching_open(code, close_bracket, "[", "]")
    if open_ < 0:
        return None
    name, at = word_before(code, open_)
    if name and name not in ("return", "co_return"):  # `a[i] {` is not a lambda
        return None
    m = re.search(r"(\w+)\s*=\s*$", code[max(0, open_ - 80):open_])
    return ("lambda " + m.group(1) if m else "lambda", open_)


def looks_like_construction(code, name_at):
    """`Type value(args) {` cannot occur, but `new Type(args) {` or `= Type(args) {` would not be
    definitions either: a definition's name follows a type, `::`, a line start or `~`."""
    j = name_at
    while j > 0 and code[j - 1] in " \t":
        j -= 1
    return j > 0 and code[j - 1] in "=(,"


def cxx_functions(text):
    """Yields (name, first line, last line) for every function body in C++ source text."""
    code = blank_non_code(text)
    line_of = [0] * (len(code) + 1)
    line = 1
    for k, c in enumerate(code):
        line_of[k] = line
        if c == "\n":
            line += 1
    stack = []
    for k, c in enumerate(code):
        if c == "{":
            stack.append((k, function_head(code, k)))
        elif c == "}" and stack:
            _, head = stack.pop()
            if head is not None:
                yield head[0], line_of[head[1]], line_of[k]


def python_functions(text):
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node.end_lineno


def source_files(root):
    for top in PYTHON_DIRS:
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and (path.suffix in CXX_SUFFIXES and top in CXX_DIRS
                                   or path.suffix == ".py"):
                yield path


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else __file__).resolve()
    if root.is_file():
        root = root.parents[2]
    failures = []
    allowed_seen = set()
    for path in source_files(root):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines > MAX_FILE_LINES:
            failures.append(f"{rel}: {lines} lines (limit {MAX_FILE_LINES}): split it by topic")
        functions = python_functions(text) if path.suffix == ".py" else cxx_functions(text)
        for name, first, last in functions:
            length = last - first + 1
            if length <= MAX_FUNCTION_LINES:
                continue
            key = f"{rel}:{name}"
            if key in ALLOWED:
                allowed_seen.add(key)
                continue
            failures.append(f"{rel}:{first}: {name} is {length} lines (limit {MAX_FUNCTION_LINES})")
    for key in sorted(set(ALLOWED) - allowed_seen):
        failures.append(f"{key}: allowed to be long but no longer is; drop it from ALLOWED")
    for failure in failures:
        print(failure)
    if failures:
        print(f"{len(failures)} over the limits; split them into named steps (issue #23)")
        return 1
    print(f"every function is at most {MAX_FUNCTION_LINES} lines, every file at most "
          f"{MAX_FILE_LINES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
