#!/usr/bin/env python3
"""Keep a copy of a Nonsense Entry Service's entries by following its change log.

Standard library only. Usage:

    python3 follow_changes.py BASE_URL COPY_FILE [--follow] [--interval SECONDS]

The first run reads the status's revision, downloads the JSON export and then applies every change
since that revision; later runs resume from the revision saved in COPY_FILE. Without --follow it
stops once it has caught up; with --follow it keeps polling. COPY_FILE holds
{"revision": R, "entries": {uuid: {"text": raw text, "timestamp": seconds}}}, written atomically
after every page of changes. The raw text is `original_nonsense` when present, else `nonsense`.
"""
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request


def get(url):
    """GET url; returns (status, headers, parsed JSON body)."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.load(error)


def raw(entry):
    return {"text": entry.get("original_nonsense", entry["nonsense"]), "timestamp": entry["timestamp"]}


def start(base):
    """A fresh copy: the revision first, then the export, so no change can fall between them."""
    status, _, body = get(base + "/api/v1/nonsense/status")
    if status != 200:
        raise SystemExit(f"status: {status} {body}")
    revision = body["revision"]
    status, _, exported = get(base + "/api/v1/nonsense?format=json")
    if status != 200:
        raise SystemExit(f"export: {status} {exported}")
    return {"revision": revision, "entries": {entry["uuid"]: raw(entry) for entry in exported}}


def apply(copy, change):
    """Apply one change; applying a change the copy already has changes nothing."""
    kind, key = change["type"], change["key"]
    if kind in ("entry.created", "entry.updated", "entry.restored"):
        copy["entries"][key] = raw(change["entry"])
    elif kind in ("entry.hidden", "entry.deleted"):
        copy["entries"].pop(key, None)
    # variable.* and emoji.*: a copy of entries keeps raw texts, which variables do not change.
    copy["revision"] = change["revision"]


def save(copy, path):
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as file:
        json.dump(copy, file, ensure_ascii=False)
    os.replace(temporary, path)


def catch_up(base, copy, path):
    """Follow the pages of changes until none remain. Returns False when the copy must start again."""
    url = f"{base}/api/v1/nonsense/changes?since={copy['revision']}&limit=1000"
    while url:
        status, headers, body = get(url)
        if status == 410:
            print(body["detail"], file=sys.stderr)
            return False
        if status != 200:
            raise SystemExit(f"changes: {status} {body}")
        for change in body["changes"]:
            apply(copy, change)
        save(copy, path)
        match = re.match(r'<([^>]+)>;\s*rel="next"', headers.get("Link") or "")
        url = match.group(1) if match else None
    return True


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    base, path = argv[1].rstrip("/"), argv[2]
    follow = "--follow" in argv
    interval = float(argv[argv.index("--interval") + 1]) if "--interval" in argv else 1.0
    if os.path.exists(path):
        with open(path, encoding="utf-8") as file:
            copy = json.load(file)
    else:
        copy = start(base)
        save(copy, path)
    while True:
        if not catch_up(base, copy, path):
            copy = start(base)
            save(copy, path)
            continue
        if not follow:
            return
        time.sleep(interval)


if __name__ == "__main__":
    main(sys.argv)
