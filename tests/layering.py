#!/usr/bin/env python3
"""The floors of the house (docs/design.md, "Layers"), checked on the tracked files.

    layering.py [ROOT]

Fails (exit status 1, one line per finding) when
  1. a header or source of a lower layer includes one of a higher layer
     (core < kernels < ops < models < tasks < testing < tools; tests and
     tools may include every layer below them, but not each other; testing,
     the test support both share, includes neither), headers include each
     other in a loop, or a CMakeLists.txt of tests/ builds sources of tools/,
     one of tools/ adds tests/ to an include path, or one of testing/ names
     sources of tests/ or tools/ or adds either to an include path;
  2. a tracked text file refers to a path outside the repository (a relative
     path that climbs above the root, or a 'shared' folder beside it);
  3. a CUDA source of the library (kernels/cuda, as the library builds it:
     not a lab under tools/) branches on the CPU emulator (HKT_CUDA_EMULATED,
     HKT_WGMMA_EMULATED): the emulator supplies stand-ins, kernels do not
     branch on it. Files in PENDING_EMULATOR (none now) are reported as notes, not
     failures, until the lab moves their conditionals out (issue 39, item 1);
     a file there that no longer has any is noted too, to drop from the list;
  4. a public header (LAYER/include/hkt/...) is missing from its umbrella:
     hkt/tasks.hpp includes every hkt/tasks/ header, hkt/hkt.hpp every other
     one but the kernels' (the consumer stage of tools/test.sh checks the same
     on the installed tree, but only after the whole build: this finds it first).
Files come from `git ls-files` (every file under ROOT when it is not a git
checkout). Exit status 0 when all hold, 2 for a usage error.
"""
import os
import re
import subprocess
import sys

# testing/: shared test support (header-only helpers and CMake functions) for both tests/ and tools/.
RANK = {"core": 0, "kernels": 1, "ops": 2, "models": 3, "tasks": 4, "testing": 5, "tools": 6, "tests": 6}
ORDER = "core < kernels < ops < models < tasks < testing < tools"
# Public include roots: "hkt/<layer>/..." and the umbrella headers.
UMBRELLA = {"hkt/hkt.hpp": "models", "hkt/tasks.hpp": "tasks", "hkt/version.hpp": "core"}
SOURCE = re.compile(r"\.(c|cc|cpp|cxx|h|hh|hpp|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
# A preprocessor conditional on the emulator (#if, #ifdef, #ifndef, #elif naming its macros).
EMULATOR = re.compile(r"^\s*#\s*(?:if|ifdef|ifndef|elif)\b.*\b(HKT_CUDA_EMULATED|HKT_WGMMA_EMULATED)\b")
# The library's CUDA sources that still branched on the emulator when this test was
# written (the lab of issue 39, item 1, takes the conditionals out); drop each file
# once it is clean, and the list once it is empty.
PENDING_EMULATOR = set()  # none left: kernels/cuda/ptx.cuh has the instructions, kernels/cuda_emu the stand-ins
# A source file under tools/ (or tests/) as a CMakeLists names it (a path string, quoted or not).
TOOLS_SOURCE = re.compile(r"(?<![A-Za-z0-9_.\-])tools/[A-Za-z0-9_.\-/]*\.(?:c|cc|cpp|cxx|h|hh|hpp|cu|cuh)\b")
TESTS_SOURCE = re.compile(r"(?<![A-Za-z0-9_.\-])tests/[A-Za-z0-9_.\-/]*\.(?:c|cc|cpp|cxx|h|hh|hpp|cu|cuh)\b")
# A path token: characters of a path, at least one "../" in it.
PARENT_PATH = re.compile(r"(?:\.\./)+[A-Za-z0-9_.\-/]*")


def tracked(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
        return [f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith("build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def layer_of(path):
    top = path.split("/", 1)[0]
    return top if top in RANK else None


def include_roots(path, files):
    """Where an include of `path` may be found, as the build sets it up for that layer."""
    roots = [os.path.dirname(path), ""]
    roots += sorted({f.split("/include/")[0] + "/include" for f in files if "/include/hkt/" in f
                     and not f.startswith("tests/")})
    # Last, the test and tool folders, so that an include of either from anywhere is seen.
    return roots + ["tests", "tools"]


def resolve(inc, path, files, fileset):
    for pre, lay in UMBRELLA.items():
        if inc == pre:
            return lay, inc
    for r in include_roots(path, files):
        cand = os.path.normpath(os.path.join(r, inc)) if r else os.path.normpath(inc)
        if cand in fileset:
            return layer_of(cand), cand
    return None, None  # a system or third-party header


def check_includes(root, files, fileset, out):
    graph = {}
    for f in files:
        lay = layer_of(f)
        if lay is None or not SOURCE.search(f):
            continue
        text = read(root, f)
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            to, where = resolve(inc, f, files, fileset)
            if where is not None and where in fileset:
                graph.setdefault(f, []).append(where)
            if to is None or to == lay:
                continue
            line = text.count("\n", 0, m.start()) + 1
            if {lay, to} == {"tests", "tools"}:
                out.append(f"{f}:{line}: includes {where} ({to}): tests and tools must not include each other")
            elif RANK[to] > RANK[lay]:
                out.append(f"{f}:{line}: includes {where}: {lay} is below {to} "
                           f"({ORDER}; tests beside tools; docs/design.md, \"Layers\")")


    # Include loops: a depth-first search over the includes resolved above.
    state, stack = {}, []

    def visit(f):
        state[f] = 1
        stack.append(f)
        for g in graph.get(f, []):
            if state.get(g) == 1:
                loop = stack[stack.index(g):] + [g]
                out.append(f"{f}: include loop: {' -> '.join(loop)}")
            elif g not in state:
                visit(g)
        stack.pop()
        state[f] = 2

    for f in sorted(graph):
        if f not in state:
            visit(f)


def check_cmake(root, files, out):
    for f in files:
        if not f.endswith("CMakeLists.txt"):
            continue
        lay = layer_of(f)
        text = read(root, f)
        for i, line in enumerate(text.split("\n"), 1):
            code = line.split("#", 1)[0]
            if lay == "tests" and re.search(r"\b(add_subdirectory|add_executable|add_library|target_sources)\b", code) \
                    and re.search(r"PROJECT_SOURCE_DIR\}/tools/|(^|[\s(])\.\./tools/", code):
                out.append(f"{f}:{i}: tests build sources of tools/ (move the shared code to its layer)")
            # A source file of tools/ named anywhere in the line, e.g. in a list that a generated
            # translation unit #includes (tools' scripts, .cmake and .supp files, may be run).
            elif lay == "tests" and TOOLS_SOURCE.search(line):
                out.append(f"{f}:{i}: names {TOOLS_SOURCE.search(line).group(0)}: tests build sources of tools/ "
                           "(move the shared code to its layer)")
            if lay == "tools" and "target_include_directories" in code and re.search(r"/tests\b", code):
                out.append(f"{f}:{i}: tools add tests/ to an include path")
            # testing/ is below both: it names no source of either, nor adds either to an include path.
            if lay == "testing":
                for pat in (TOOLS_SOURCE, TESTS_SOURCE):
                    if pat.search(line):
                        out.append(f"{f}:{i}: names {pat.search(line).group(0)}: testing/ is below tests/ "
                                   "and tools/ (move the shared code here)")
                if "include_directories" in code and re.search(r"/(tests|tools)\b", code):
                    out.append(f"{f}:{i}: testing/ adds tests/ or tools/ to an include path")


def check_outside_paths(root, files, out):
    for f in files:
        text = read(root, f)
        if text is None:
            continue
        base = os.path.dirname(f)
        for i, line in enumerate(text.split("\n"), 1):
            for m in PARENT_PATH.finditer(line):
                tok = m.group(0)
                target = os.path.normpath(os.path.join(base, tok))
                if target == ".." or target.startswith("../") or re.match(r"(\.\./)+shared/", tok):
                    out.append(f"{f}:{i}: refers to '{tok}', outside the repository")


def check_emulator(root, files, out, notes):
    flagged = set()
    for f in files:
        if not f.startswith("kernels/cuda/") or not re.search(r"\.(cu|cuh|hpp|h|cpp)$", f):
            continue
        text = read(root, f)
        for i, line in enumerate(text.split("\n"), 1):
            m = EMULATOR.search(line)
            if m:
                flagged.add(f)
                msg = f"{f}:{i}: {m.group(1)}: the library's CUDA sources must not branch on the emulator"
                (notes if f in PENDING_EMULATOR else out).append(msg)
    for f in sorted(PENDING_EMULATOR - flagged):
        notes.append(f"{f}: no emulator conditional left: drop it from PENDING_EMULATOR")


def check_umbrellas(root, files, out):
    umbrella = {"hkt": "models/include/hkt/hkt.hpp", "tasks": "tasks/include/hkt/tasks.hpp"}
    text = {k: read(root, v) or "" for k, v in umbrella.items()}
    for f in files:
        m = re.match(r"^(core|kernels|ops|models|tasks)/include/(hkt/.+\.hpp)$", f)
        if not m:
            continue
        h = m.group(2)
        if h in ("hkt/hkt.hpp", "hkt/tasks.hpp") or h.startswith("hkt/kernels/"):
            continue
        which = "tasks" if h.startswith("hkt/tasks/") else "hkt"
        if f'"{h}"' not in text[which]:
            out.append(f"{umbrella[which]}: does not include the public header {h} ({f})")


def read(root, f):
    try:
        with open(os.path.join(root, f), encoding="utf-8") as fh:
            return fh.read()
    except (UnicodeDecodeError, OSError):
        return None  # binary


def main():
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help")):
        print(__doc__)
        return 2
    root = os.path.abspath(sys.argv[1] if len(sys.argv) == 2 else os.path.join(os.path.dirname(__file__), ".."))
    files = tracked(root)
    fileset = set(files)
    out = []
    check_includes(root, files, fileset, out)
    check_cmake(root, files, out)
    check_outside_paths(root, files, out)
    check_umbrellas(root, files, out)
    notes = []
    check_emulator(root, files, out, notes)
    for line in notes:
        print("layering: note (pending, not a failure): " + line)
    for line in out:
        print("layering: " + line)
    print(f"layering: {len(files)} files, {len(out)} finding(s), {len(notes)} pending note(s)")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
