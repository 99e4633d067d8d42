#!/usr/bin/env bash
# apt-get, one at a time: the test command's parts and the set-up it starts early may each
# install a package while another does, and apt-get refuses to run beside itself.
set -euo pipefail
exec flock "${TMPDIR:-/tmp}/outbound-apt.lock" apt-get "$@"
