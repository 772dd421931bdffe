#!/usr/bin/env bash
# Build dist/podsync, one self-contained executable, from a checkout.
#
#   packaging/build.sh            # -> dist/podsync
#
# It makes its own virtualenv (build/venv) from $PYTHON (default python3, 3.11+),
# installs podsync and PyInstaller into it from PyPI, and freezes with
# packaging/podsync.spec. The venv is kept and reused while pyproject.toml and the
# PyInstaller pin below are unchanged; podsync itself is reinstalled every time.
# PyInstaller does not cross-compile: the binary runs on the OS and CPU it was
# built on (build on the Raspberry Pi for the Raspberry Pi).
set -euo pipefail

PYINSTALLER_REQUIREMENT='pyinstaller>=6.10,<7'

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
venv="$root/build/venv"
stamp="$venv/.podsync-build-stamp"
want_stamp="$(cat pyproject.toml packaging/build.sh | sha256sum | cut -d' ' -f1)"

# A venv created from inside another venv must not inherit it.
unset PYTHONPATH PYTHONHOME

# setuptools builds in build/lib; a module deleted from the tree must not linger there.
rm -rf build/lib build/bdist.* ./*.egg-info

if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want_stamp" ]]; then
    echo "build.sh: creating $venv" >&2
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$PYINSTALLER_REQUIREMENT" ".[postgres,metrics]"
    echo "$want_stamp" >"$stamp"
else
    # Same dependencies: only the package's own code may have changed.
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --no-deps --force-reinstall .
fi

rm -rf build/lib build/bdist.* ./*.egg-info

# Run outside the tree: from the repo root, "podsync" and its egg-info would be
# found in the working directory instead of the installed package.
(cd "$root/build" && "$venv/bin/python" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath "$root/dist" --workpath "$root/build/pyinstaller" \
    "$root/packaging/podsync.spec")

echo "build.sh: built $root/dist/podsync ($(du -h dist/podsync | cut -f1))" >&2
