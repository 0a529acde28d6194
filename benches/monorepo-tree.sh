#!/bin/sh
# Builds the 17,309-file tree of the README's repo map numbers: Python 3.11's standard
# library (no site-packages, bytecode or shared objects) plus whole crates from cargo's
# registry in name order until about 17,300 files, then git init + commit.
#   benches/monorepo-tree.sh DIR [PYTHON_STDLIB_DIR]
# Then `cd DIR && tern map --stats` (cold, then warm), `git worktree add`, and so on.
set -e
T=${1:?usage: monorepo-tree.sh DIR [PYTHON_STDLIB_DIR]}
PY=${2:-$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')}
rm -rf "$T"; mkdir -p "$T/python" "$T/crates"
(cd "$PY" && find . -type f -not -path '*/__pycache__/*' -not -path './site-packages/*' \
  -not -name '*.pyc' -not -name '*.so' | tar -cf - -T -) | tar -xf - -C "$T/python"
n=$(find "$T" -type f | wc -l)
for c in $(ls ~/.cargo/registry/src/*/ | sort); do
  [ "$n" -ge 17300 ] && break
  cp -r ~/.cargo/registry/src/*/"$c" "$T/crates/$c"
  rm -f "$T/crates/$c/.gitignore" "$T/crates/$c/.cargo_vcs_info.json"
  n=$(find "$T" -type f -not -path '*/.git/*' | wc -l)
done
cd "$T"
git init -q && git add -A && git -c user.name=bench -c user.email=bench@example.com commit -qm tree
echo "files: $(git ls-files | wc -l)"
