#!/bin/sh
# Runs one Criterion test program with its TAP report on stdout (read by
# automake's TAP driver) and its human-readable report merged after it.
t=$1
shift
exec "$t" --tap=/dev/stdout --ascii "$@" 2>&1
