#!/bin/sh
# The failclass service container: wait for the database, migrate it once, then serve.
# Reads FAILCLASS_DATABASE_URL (required), FAILCLASS_HOST, FAILCLASS_PORT,
# FAILCLASS_WORKERS, FAILCLASS_TOKENS_FILE and every other FAILCLASS_* setting of the
# service; arguments are passed on to `failclass serve`.
set -eu
: "${FAILCLASS_DATABASE_URL:?set FAILCLASS_DATABASE_URL, e.g. postgresql+psycopg://failclass:secret@db:5432/failclass}"

tries="${FAILCLASS_DB_WAIT_TRIES:-30}"
until failclass db upgrade; do
    tries=$((tries - 1))
    if [ "$tries" -le 0 ]; then
        echo "entrypoint: the database at FAILCLASS_DATABASE_URL could not be migrated; giving up" >&2
        exit 1
    fi
    echo "entrypoint: database not ready, retrying in 2 s ($tries tries left)" >&2
    sleep 2
done

exec failclass serve \
    --host "${FAILCLASS_HOST:-0.0.0.0}" \
    --port "${FAILCLASS_PORT:-8080}" \
    --workers "${FAILCLASS_WORKERS:-2}" \
    "$@"
