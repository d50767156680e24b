#!/usr/bin/env bash
# The workshop hub on one VM, as root on a fresh Debian 12 machine:  sudo deploy/hub.sh
# Installs (once; later runs only check) the hub's venv, configurable-http-proxy and the attendees' environment
# under $VNETLAB_HUB_PREFIX (default /opt/vnetlab-hub), then runs JupyterHub in the foreground (Ctrl-C stops the hub
# and its proxy; attendees' servers keep running for the next start). `deploy/hub.sh install` installs only,
# `deploy/hub.sh stop` stops everything, `deploy/hub.sh reset-password NAME` frees a name. Settings: deploy/README.md.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
export VNETLAB_HUB_PREFIX=${VNETLAB_HUB_PREFIX:-/opt/vnetlab-hub}
export VNETLAB_HUB_STATE=${VNETLAB_HUB_STATE:-$VNETLAB_HUB_PREFIX/state}
PREFIX=$VNETLAB_HUB_PREFIX
CHP_VERSION=5.3.0
JUPYTERHUB_PIN=$(grep -E '^jupyterhub==' "$HERE/hub-requirements.txt")
# Debian's python3, never one from a user's PATH (a pyenv under /root would leave attendees unable to run it).
PY=/usr/bin/python3
say() { echo "[hub] $*" >&2; }

[ "$(id -u)" = 0 ] || { say "run as root (it makes one Unix account per attendee): sudo $0 $*"; exit 1; }

# The instructor's commands: reset-password NAME (a forgotten password), names (who claimed what), stop (the hub and
# every attendee's server, which a Ctrl-C of the hub leaves running for its next start).
case "${1:-}" in
    reset-password|names|stop)
        [ -x "$PREFIX/hub/bin/python" ] || { say "not installed in $PREFIX"; exit 1; }
        exec "$PREFIX/hub/bin/python" "$HERE/vnetlab_hub.py" --state "$VNETLAB_HUB_STATE" "$@" ;;
    ""|install) ;;
    *) say "unknown command $1 (install, reset-password NAME, names, stop; none: run the hub)"; exit 2 ;;
esac

# Debian's python3-venv and nodejs/npm (configurable-http-proxy is a node program), only if missing.
missing=()
$PY -c 'import ensurepip' 2>/dev/null || missing+=(python3 python3-venv)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
# each home's own file system (mkfs.ext4, a loop mount) and each server's own /tmp (a mount namespace)
command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
command -v unshare >/dev/null && command -v losetup >/dev/null || missing+=(util-linux mount)
if [ ${#missing[@]} -gt 0 ]; then
    say "apt-get install ${missing[*]}"
    timeout 600 apt-get update -qq
    DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
mkdir -p "$PREFIX"
chmod 755 "$PREFIX"

# A stamp per part: what it was installed from; a part is reinstalled only when that changes.
stamp_ok() { [ -f "$PREFIX/$1.stamp" ] && [ "$(cat "$PREFIX/$1.stamp")" = "$2" ]; }

hub_src=$( (cat "$HERE/hub-requirements.txt"; $PY --version) | sha256sum | cut -c1-16)
if ! stamp_ok hub "$hub_src"; then
    say "the hub's venv: $PREFIX/hub ($JUPYTERHUB_PIN)"
    rm -rf "$PREFIX/hub"
    $PY -m venv "$PREFIX/hub"
    timeout 900 "$PREFIX/hub/bin/pip" install -q --disable-pip-version-check -r "$HERE/hub-requirements.txt"
    echo "$hub_src" > "$PREFIX/hub.stamp"
fi

if ! stamp_ok proxy "$CHP_VERSION"; then
    say "configurable-http-proxy $CHP_VERSION from the npm registry: $PREFIX/proxy"
    rm -rf "$PREFIX/proxy"
    timeout 600 npm install --silent --no-audit --no-fund --prefix "$PREFIX/proxy" \
        "configurable-http-proxy@$CHP_VERSION" >/dev/null
    echo "$CHP_VERSION" > "$PREFIX/proxy.stamp"
fi

# The attendees' environment: the lock file's pins (hashes checked), vnetlab itself from this checkout (not
# editable: attendees cannot change the package under each other), and jupyterhub-singleuser at the hub's version.
# the files' contents only: mtimes, __pycache__ and hidden folders (JupyterLab's .ipynb_checkpoints) would force a reinstall
env_src=$( (cat "$REPO/requirements.lock" 2>/dev/null || echo no-lock; echo "$JUPYTERHUB_PIN"; $PY --version;
            cd "$REPO" && find pyproject.toml vnetlab data jupyter-settings/overrides.json -type f \
                ! -path '*/__pycache__/*' ! -path '*/.*' ! -name '*.pyc' -print0 2>/dev/null | sort -z | xargs -0 sha256sum) \
          | sha256sum | cut -c1-16)
if ! stamp_ok env "$env_src"; then
    say "the attendees' environment: $PREFIX/env"
    rm -rf "$PREFIX/env"
    $PY -m venv "$PREFIX/env"
    pip=("$PREFIX/env/bin/pip" install -q --disable-pip-version-check)
    if [ -f "$REPO/requirements.lock" ]; then
        timeout 900 "${pip[@]}" --require-hashes -r "$REPO/requirements.lock"
        timeout 600 "${pip[@]}" --no-deps "$REPO"
    else
        say "no requirements.lock in $REPO: installing vnetlab with its unpinned dependencies"
        timeout 900 "${pip[@]}" "$REPO"
    fi
    timeout 600 "${pip[@]}" "$JUPYTERHUB_PIN"
    # The workbook's JupyterLab settings as the environment's defaults (no news toast, no update check).
    mkdir -p "$PREFIX/env/share/jupyter/lab/settings"
    cp "$REPO/jupyter-settings/overrides.json" "$PREFIX/env/share/jupyter/lab/settings/overrides.json"
    # Matplotlib's font list, built once here and copied into each new home: every attendee's first import
    # would otherwise scan the fonts again (seconds of CPU each, the whole room at once).
    MPLCONFIGDIR="$PREFIX/env/share/vnetlab-hub/matplotlib" timeout 300 "$PREFIX/env/bin/python" \
        -c 'import matplotlib.font_manager'
    chmod -R a+rX "$PREFIX/env"
    echo "$env_src" > "$PREFIX/env.stamp"
fi

# Passwords: given in the environment, or made once and kept in the state folder (root only).
mkdir -p "$VNETLAB_HUB_STATE"
chmod 700 "$VNETLAB_HUB_STATE"
secrets=$VNETLAB_HUB_STATE/passwords
if [ ! -f "$secrets" ]; then
    (umask 077; printf 'VNETLAB_HUB_PASSWORD=%s\nVNETLAB_HUB_ADMIN_PASSWORD=%s\n' \
        "$($PY -c 'import secrets; print(secrets.token_urlsafe(9))')" \
        "$($PY -c 'import secrets; print(secrets.token_urlsafe(30))')" > "$secrets")
fi
# shellcheck disable=SC1090
saved_user=${VNETLAB_HUB_PASSWORD:-}; saved_admin=${VNETLAB_HUB_ADMIN_PASSWORD:-}
. "$secrets"
export VNETLAB_HUB_PASSWORD=${saved_user:-$VNETLAB_HUB_PASSWORD}
export VNETLAB_HUB_ADMIN_PASSWORD=${saved_admin:-$VNETLAB_HUB_ADMIN_PASSWORD}

[ "${1:-}" = install ] && { say "installed in $PREFIX"; exit 0; }

say "attendees: a name, a password of their own and the room password $VNETLAB_HUB_PASSWORD (first login only);"
say "instructor: ${VNETLAB_HUB_ADMIN:-instructor}, password in $secrets; listening on ${VNETLAB_HUB_BIND:-http://127.0.0.1:8000}"
cd "$VNETLAB_HUB_STATE"
exec "$PREFIX/hub/bin/jupyterhub" -f "$HERE/jupyterhub_config.py"
