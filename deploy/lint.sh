#!/usr/bin/env bash
# The project's static checks, as CI and pre-commit run them: ruff (lint and format),
# mypy strict on the packages and tests/ (file list in pyproject's [tool.mypy]), the docs
# site (mkdocs build --strict), shellcheck on every shell script, no tracker references in
# tracked files. Installs shellcheck from Debian when missing; needs the venv
# (deploy/setup.sh). Exit 1 when any check fails.

SCRIPT_NAME=lint.sh
# shellcheck source=local/lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/local/lib.sh"

ensure_debian_packages "$PROJECT_ROOT/.local/apt-lint.log" shellcheck
VENV_BIN="${ADAPTALLOC_VENV:-$PROJECT_ROOT/.venv}/bin"
cd "$PROJECT_ROOT"

failed=()
run_check() {
    local name="$1"
    shift
    if "$@"; then
        log "$name: clean"
    else
        failed+=("$name")
    fi
}
run_check "ruff check" "$VENV_BIN/ruff" check --quiet .
run_check "ruff format" "$VENV_BIN/ruff" format --check --quiet .
run_check "mypy" "$VENV_BIN/mypy"
# The repository speaks of the product: a reader has no tracker, so no tracked file names an
# issue or ticket by number, or "the issue" as a source. Prints the offending lines; git grep
# exits 1 when nothing matches, 0 on a match, more on an error. No exclusions.
no_tracker_refs() {
    local rc=0
    git grep -n -I -i -E "\b(issue|ticket)s?[ -]?#?[0-9]+|\bthe issue[']s\b|\(#[0-9]+\)" -- . || rc=$?
    ((rc == 1)) || { warn "name what the thing is or why, not the ticket it came from"; return 1; }
}
run_check "no tracker references" no_tracker_refs
# The docs site (mkdocs.yml): broken links, anchors and nav entries fail. Offline: no plugin
# that fetches; the CLI reference is generated from the click commands (mkdocs-click).
run_check "mkdocs build --strict" env NO_MKDOCS_2_WARNING=1 "$VENV_BIN/mkdocs" build --strict \
    --quiet --site-dir "$PROJECT_ROOT/.local/site"
mapfile -t scripts < <(git ls-files '*.sh' .ci/run)
run_check "shellcheck" shellcheck -x "${scripts[@]}"

((${#failed[@]} == 0)) || die "failed: ${failed[*]}"
log "all static checks clean"
