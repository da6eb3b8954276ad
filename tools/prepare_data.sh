#!/usr/bin/env bash
# The former name of tools/hkt-data (same data sets, options and environment; see its --help).
exec "$(dirname "${BASH_SOURCE[0]}")/hkt-data" "$@"
