#!/usr/bin/env python3
"""Runs the code blocks of README.md and docs/*.md as written, against receivers on 127.0.0.1.

    scripts/check-docs.py --part python|c|go|rust|relay [--part ...] [--list]
    scripts/check-docs.py --text     the user docs' text alone, nothing run (see check_text)

Each block belongs to a part (its language; a shell or TOML block to the section it is in),
and each scripts/test-<part>.sh runs its own part, with what that part builds at hand:

    python  the installed wheel (OUTBOUND_DOCS_PYTHON, default .venv/bin/python; the wheel
            file OUTBOUND_TEST_WHEEL), node
    c       liboutbound (OUTBOUND_C_LIBDIR, default target/debug) and a C compiler
    go      liboutbound.a as for c, and go
    rust    the outbound rlib (cargo build -p outbound), rustc
    relay   the relay binary (OUTBOUND_RELAY_BIN, default target/debug/outbound-relay), curl

Running a block as written means: its text, with the substitutions of SUBSTITUTE (example
URLs become the local receivers; nothing else changes), plus for a fragment the names it
assumes from its surroundings (SETUP: a `request` object, a `client`, ...). A block that
cannot run is in SKIP with its reason; a block in neither runs with its language's runner, so
a new block is checked unless someone says why not. The blocks run inside a network
namespace of their own (`unshare -rn`: loopback only), so none can reach the internet; where
that is not possible, HTTP(S)_PROXY points at a closed port and blocks that need fixed ports
are skipped.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["README.md"] + sorted(glob.glob("docs/*.md", root_dir=ROOT))
INSIDE = "OUTBOUND_DOCS_INSIDE"  # set once re-run inside the network namespace

# Placeholders in the docs and what they become when run. Only these are changed.
SUBSTITUTE = [
    ("https://api.segment.io", "{ingest}"),  # the default ingestion endpoint: a local receiver
    ("https://hooks.example.com/in", "{hook}"),  # the example webhook: a local receiver
    ("/path/to/outbound", "{root}"),  # "where you cloned it"
]

# (doc, text the block contains, why it is not run). The doc is a prefix ("docs/" matches all).
SKIP: List[Tuple[str, str, str]] = [
    ('README.md', 'scripts/demo.sh   #',
     'the demo and the test command themselves: the test command is what runs this check, '
     'the demo builds release artifacts for minutes'),
    ('docs/python.md', 'scripts/demo.sh',
     'the demo: release builds for minutes, run on its own'),
    ('', 'scripts/install-c.sh "$HOME/.local/outbound"',
     'scripts/test-c.sh runs install-c.sh into a temporary prefix (debug profile)'),
    ('', 'cc -std=c11 examples/c/quickstart.c',
     'scripts/test-c.sh runs these cc lines as written, from the root, against that prefix'),
    ('docs/relay.md', "import { AnalyticsBrowser } from '@segment/analytics-next'",
     "an application's module, bundled for a browser: tests/relay/test_web.py loads "
     'analytics-next in Chromium with only cdnURL pointing at the relay'),
    ('docs/relay.md', '{"integrations":{"Segment.io":{"apiKey":"wk_web_1"',
     "the settings document's shape, abridged ({...}): crates/outbound-relay/tests/"
     "segment_api.rs checks the relay's answer field by field"),
    ('docs/relay.md', '--path crates/outbound-relay',
     "release build and install into ~/.cargo/bin; the README's relay block runs the same "
     'binary on a config'),
    ('docs/python.md', 'import sqlite3, sys',
     "needs a spool file no client holds: tests/python/test_spool.py runs it on what close() "
     "left"),
    ('docs/operations.md', 'kill -STOP',
     'tests/relay/test_operations.py runs this block as written (paths replaced) on a relay '
     'acknowledging events, then restores the copy'),
    ('docs/operations.md', '.backup',
     'tests/relay/test_operations.py runs this block as written (paths replaced) while a relay '
     'runs'),
    ('docs/operations.md', '"allowed_networks":[',
     'tests/relay/test_operations.py runs this block (host, source and network replaced) on a '
     'relay upgraded from an earlier build'),
    ('docs/receivers.md', '<!-- file:',
     'a file under examples/receivers/: tests/python/test_receivers.py checks the block is '
     'the file and runs it against real requests'),
    ('docs/receivers.md', '<!-- body:',
     'a body, not code: tests/python/test_receivers.py compares it with what the client '
     'sends'),
    ('docs/c.md', 'liboutbound.so     -> liboutbound.so.0.',
     'a listing of installed files, not code'),
    ('docs/go.md', 'func TestSignupNotifiesTheCustomer',
     'the test of that name in bindings/go/testing_test.go: scripts/test-go.sh checks they '
     'match and go test runs it'),
    ('docs/go.md', 'ok := outbound.Verify(',
     'lines of your HTTP handler (r, rawBody, handler are its own): '
     'bindings/go/receiver_test.go tests Verify and VerifyMiddleware'),
    ('docs/go.md', 'err := outbound.VerifyStandard(',
     'lines of your HTTP handler (r, rawBody, handler are its own): '
     'bindings/go/standard_webhooks_test.go tests them'),
    ('docs/deploy.md', '<!-- deploy:',
     'podman, systemd, helm and podman-compose commands: scripts/test-deploy.sh runs each in '
     'the test named in the comment above the block (its own names, ports and secrets)'),
    ('docs/relay.md', '"event":"webhook.circuit_opened"',
     "an alert's body as the operator's URL receives it: crates/outbound-relay/tests/alerts.rs "
     'checks each alert field by field, and its signature'),
    ('docs/relay.md', 'client_key = "/etc/outbound-relay/hooks-client.key"',
     "a client certificate, its key and a CA on the relay's host: crates/outbound-relay/tests/"
     'endpoints.rs runs mutual TLS against a receiver that asks for the certificate'),
    ('docs/subscriptions.md', 'client_key = "/etc/outbound-relay/crm-client.key"',
     "a client certificate, its key and a CA on the relay's host: crates/outbound-relay/tests/"
     'subscriptions.rs runs mutual TLS for a subscription against a receiver that asks for it'),
    ('docs/rust.md', '[dependencies]',
     'a Cargo.toml fragment: the Rust blocks are built against the same crate instead (a '
     'new crate would compile the core again)'),
]

# A relay on a free port with the admin API on, for blocks that call it: $relay, $ADMIN.
RELAY_WITH_ADMIN = """cat > relay.toml <<'TOML'
listen = "127.0.0.1:0"
data_dir = "data"
admin_token = "adm"
allowed_networks = ["127.0.0.0/8"]
TOML
outbound-relay --config relay.toml > relay.addr 2> relay.log &
until [ -s relay.addr ]; do sleep 0.1; done
relay="http://$(cat relay.addr)"
ADMIN=adm
"""

# Per block (doc, text it contains): what a fragment needs around it, and what must arrive.
# prelude/postlude are in the block's language; expect = {"hook": n, "ingest": n}, the least
# number of messages the local receivers must have when the block ends.
SETUP: Dict[Tuple[str, str], Dict[str, Any]] = {
    ("README.md", "import outbound\n\nclient = outbound.Client("): {"expect": {"hook": 4, "ingest": 3}},
    ("docs/python.md", "client.screen(user_id=\"u1\", name=\"Home\")"): {"expect": {"hook": 7, "ingest": 6}},
    ("docs/python.md", "ok = outbound.verify(\"s3cret\""): {
        "prelude": "import json\nimport outbound\n"
        "request_body_bytes = b'{\"type\":\"track\",\"userId\":\"u1\",\"event\":\"E\"}'\n"
        "class request:  # your web framework's request\n"
        "    headers = {'X-Signature': outbound.sign('s3cret', request_body_bytes)}\n"
        "signature = request.headers['X-Signature']\n",
        "postlude": "assert ok\n",
    },
    ("docs/python.md", "signature_scheme=\"standard-webhooks\","): {
        "prelude": "import time\nimport outbound\n"
        "request_body_bytes = b'{\"type\":\"track\",\"userId\":\"u1\",\"event\":\"E\"}'\n"
        "_ts = int(time.time())\n"
        "class request:  # your web framework's request\n"
        "    headers = {'webhook-id': 'msg_1', 'webhook-timestamp': str(_ts),\n"
        "               'webhook-signature': outbound.sign_standard_webhook(\n"
        "                   'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'msg_1', _ts, request_body_bytes)}\n",
        "postlude": "assert ok\nclient.close()\n",
    },
    # Inspecting a spool: run while the client runs, with messages pending for a closed port;
    # the page's claims checked beside it: no -shm file, another process is locked out.
    ("docs/python.md", "print(client.dead_letter_stats())"): {
        "prelude": "import os, subprocess, sys, tempfile, time\nimport outbound\n"
        "_spool = tempfile.mkdtemp()\n"
        "client = outbound.Client(webhooks=['http://127.0.0.1:9/in'], spool=_spool, dead_letters=True)\n"
        "for _ in range(5):\n    client.track(user_id='u1', event='E')\n"
        "time.sleep(0.5)  # committed (every 20 ms)\n",
        "postlude": "assert s['queued'] + s['in_flight'] == 5, s\n"
        "_files = os.listdir(_spool)\n"
        "assert not [f for f in _files if f.endswith('-shm')], _files\n"
        "_db = os.path.join(_spool, next(f for f in _files if f.endswith('.db')))\n"
        "_r = subprocess.run([sys.executable, '-c', 'import sqlite3, sys; sqlite3.connect("
        "f\"file:{sys.argv[1]}?mode=ro\", uri=True).execute(\"SELECT 1 FROM messages\")', _db],"
        " capture_output=True, text=True)\n"
        "assert 'database is locked' in _r.stderr, (_r.returncode, _r.stderr)\n"
        "client.close(timeout=0)\n",
    },
    ("docs/python.md", "print(client.subscription_stats(\"orders\")"): {"expect": {"hook": 2}},
    ("docs/python.md", "from outbound.testing import RecordingClient"): {
        "prelude": "def signup(client, user_id):  # the code under test\n"
        "    client.track(user_id=user_id, event='Signed Up')\n",
    },
    ("docs/python.md", "sync = outbound.AudienceSync("): {
        "prelude": "import outbound\nclient = outbound.Client(webhooks=['{hook}'])\nmembers = ['u1', 'u2']\n",
        "postlude": "assert client.flush(timeout=10)\nclient.close()\n",
        "expect": {"hook": 4},
    },
    ("docs/receivers.md", "client.identify(user_id=\"u-42\""): {
        "prelude": "import outbound\nclient = outbound.Client(webhooks=['{hook}'], shared_secret='s3cret')\n",
        "postlude": "assert client.flush(timeout=10)\nclient.close()\n",
        "expect": {"hook": 8},
    },
    ("README.md", "const digest = crypto.createHmac"): {
        "prelude": "const crypto = require('node:crypto');\nconst secret = 's3cret';\n"
        "const req = { body: { type: 'track', userId: 'u1', event: 'E' } };  // express.json()\n",
        "postlude": "if (digest !== crypto.createHmac('sha1', secret)"
        ".update('{\"type\":\"track\",\"userId\":\"u1\",\"event\":\"E\"}').digest('hex')) process.exit(1);\n",
    },
    ("docs/c.md", "/* body, body_len: the raw request body"): {
        "prelude": "const char *secret = \"s3cret\";\n"
        "const uint8_t *body = (const uint8_t *)\"{\\\"type\\\":\\\"track\\\"}\";\n"
        "size_t body_len = strlen((const char *)body);\n"
        "char sig[OUTBOUND_SIGNATURE_BUFFER_LEN];\n"
        "outbound_sign((const uint8_t *)secret, strlen(secret), body, body_len, sig, sizeof sig, NULL);\n"
        "size_t sig_len = strlen(sig);\nint authentic = 0;\n",
        "edit": [("/* authentic */", "authentic = 1;")],
        "postlude": "return authentic ? 0 : 1;\n",
    },
    ("docs/c.md", "/* The three header values as received"): {
        "prelude": "const uint8_t *body = (const uint8_t *)\"{\\\"type\\\":\\\"track\\\"}\";\n"
        "size_t body_len = strlen((const char *)body);\n"
        "const char *webhook_id = \"msg_1\";\n"
        "char webhook_timestamp[32];\nlong long now = (long long)time(NULL);\n"
        "snprintf(webhook_timestamp, sizeof webhook_timestamp, \"%lld\", now);\n"
        "char webhook_signature[128];\n"
        "outbound_sign_standard(\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\", webhook_id, now, body, body_len,\n"
        "                       webhook_signature, sizeof webhook_signature, NULL);\nint authentic = 0;\n",
        "edit": [("/* authentic and recent */", "authentic = 1;")],
        "postlude": "return authentic ? 0 : 1;\n",
    },
    ("README.md", "/* outbound from C:"): {"expect": {"ingest": 2}},
    ("docs/c.md", "/* outbound from C:"): {"expect": {"ingest": 2}},
    ("docs/c.md", "outbound_options_add_subscription_json("): {"expect": {"hook": 2}},
    ("README.md", "// outbound from Go:"): {"expect": {"ingest": 2}},
    ("README.md", "go mod edit -require=outbound.invalid/bindings/go"): {
        "prelude": "go mod init example.com/app\n",
        "postlude": "go list -m outbound.invalid/bindings/go\n",
    },
    ("docs/go.md", "analytics.NewWithConfig(writeKey"): {
        "prelude": "writeKey := \"WRITE_KEY\"\n",
        "imports": ["log", "time"],
        "expect": {"hook": 1},
    },
    ("docs/go.md", "counters := client.(outbound.SubscriptionCounters)"): {"expect": {"hook": 2}},
    ("docs/go.md", "client := analytics.New(\"WRITE_KEY\")"): {
        # The v2 client's endpoint is a field; the block leaves it at its default.
        "edit": [("client.FlushAt = 1", "client.Endpoint = \"{ingest}\"\nclient.FlushAt = 1")],
        "imports": ["log"],
        "expect": {"ingest": 1},
    },
    ("README.md", "fn main() -> Result<(), outbound::Error>"): {"expect": {"hook": 1, "ingest": 1}},
    ("docs/rust.md", "client.enqueue(&Message::screen("): {"expect": {"hook": 7, "ingest": 6}},
    ("docs/rust.md", "Err(Error::MissingField { call, field })"): {"expect": {"hook": 1}},
    ("README.md", "cat > relay.toml <<'TOML'"): {
        # Built by scripts/test-relay.sh and on PATH here; the server line starts it in the
        # background (in a terminal it runs in the foreground and curl goes in another one),
        # its output kept out of the clone. Run from the clone's root, as the README says:
        # what it leaves there must be ignored by git (from_root).
        "edit": [
            ("cargo build --release -p outbound-relay", "true"),
            ("cargo install --locked --path crates/outbound-relay", "true"),
            ("outbound-relay --config relay.toml    #",
             'outbound-relay --config relay.toml > "$DOCS_TMP/relay.addr" 2> "$DOCS_TMP/relay.log" & '
             'sleep 0.2; until [ -s "$DOCS_TMP/relay.addr" ]; do sleep 0.1; done; cat "$DOCS_TMP/relay.addr"  #'),
        ],
        "postlude": "echo; kill %1; wait\n",
        "fixed_ports": True,
        "from_root": ["relay.toml", "outbound-relay-data"],
        "expect_out": '{"success":true}',
        "receiver_at": 9000,
        "expect": {"hook": 1},
    },
    ("docs/console.md", "$relay/console/"): {"expect_out": '{"caller":"admin","source":null}'},
    # The admin API's blocks, against a relay started for them ($relay, the admin token in
    # $ADMIN; for the tokens' block, the source "web" made first and one of its tokens in
    # $TOKEN).
    ("docs/relay.md", "curl -s \"https://relay.example.com/admin/audit?limit=2\""): {
        "prelude": RELAY_WITH_ADMIN + "curl -sX PUT \"$relay/admin/sources/web\" -H \"Authorization: Bearer $ADMIN\" "
        "-d '{\"write_keys\":[\"wk_web\"],\"webhooks\":[{\"url\":\"{hook}\"}]}' > /dev/null\n",
        "edit": [("https://relay.example.com", "$relay")],
        "postlude": "kill %1; wait\n",
        "expect_out": '"action":"source.created"',
    },
    ("docs/relay.md", "curl -sX PUT https://relay.example.com/admin/sources/web"): {
        "prelude": RELAY_WITH_ADMIN,
        "edit": [("https://relay.example.com", "$relay")],
        "postlude": "kill %1; wait\n",
        "expect_out": '"managed_by":"api"',
    },
    ("docs/relay.md", "curl -sX POST https://relay.example.com/admin/sources/web/tokens"): {
        "prelude": RELAY_WITH_ADMIN
        + "curl -sf -X PUT \"$relay/admin/sources/web\" -H \"Authorization: Bearer $ADMIN\" "
        "-d '{\"write_keys\":[\"wk_web_1\"],\"webhooks\":[{\"url\":\"{hook}\"}]}' > /dev/null\n"
        "TOKEN=$(curl -sf -X POST \"$relay/admin/sources/web/tokens\" -H \"Authorization: Bearer $ADMIN\" "
        "| python3 -c 'import json, sys; print(json.load(sys.stdin)[\"token\"])')\n",
        "edit": [("https://relay.example.com", "$relay")],
        "postlude": "kill %1; wait\n",
        "expect_out": '{"tokens":[{"id":',
    },
}


@dataclass
class Block:
    doc: str
    line: int
    lang: str
    text: str
    section: str
    marker: str  # the HTML comment just above the block, if any

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line} ({self.lang or 'no language'}, {self.section})"


def blocks() -> List[Block]:
    out = []
    for doc in DOCS:
        lines = open(os.path.join(ROOT, doc), encoding="utf-8").read().split("\n")
        section, i = "", 0
        while i < len(lines):
            if lines[i].startswith("## "):
                section = lines[i][3:]
            m = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
            if m:
                indent, start = len(m.group(1)), i
                i += 1
                body = []
                while not re.match(r"^\s*```\s*$", lines[i]):
                    body.append(lines[i][indent:])
                    i += 1
                marker = lines[start - 1] if start and lines[start - 1].startswith("<!--") else ""
                out.append(Block(doc, start + 1, m.group(2), "\n".join(body) + "\n", section, marker))
            i += 1
    return out


def part_of(b: Block) -> str:
    if b.lang in ("python", "json", "js"):
        return "python"
    if b.lang in ("c", "go", "rust"):
        return b.lang
    if b.lang == "toml":
        return "rust" if b.doc == "docs/rust.md" else "relay"
    topic = b.doc + " " + b.section
    for part, words in (("relay", ("relay", "docs/operations.md")), ("c", ("docs/c.md", "from C")),
                        ("go", ("from Go",)), ("python", ("python", "Python", "Two commands"))):
        if any(w in topic for w in words):
            return part
    return "python"


def skip_reason(b: Block) -> Optional[str]:
    for doc, text, why in SKIP:
        if b.doc.startswith(doc) and (text in b.text or text in b.marker):
            return why
    return None


def setup_of(b: Block) -> Dict[str, Any]:
    for (doc, text), s in SETUP.items():
        if b.doc == doc and text in b.text:
            return s
    return {}


class Receivers:
    """An ingestion endpoint and a webhook URL on 127.0.0.1 that answer 200 and count."""

    def __init__(self, hook_port: int = 0) -> None:
        self.hook: List[bytes] = []
        self.ingest: List[Any] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path.endswith("/v1/batch"):
                    outer.ingest.extend(json.loads(body)["batch"])
                else:
                    outer.hook.append(body)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: object) -> None:
                pass

        self.servers = [http.server.ThreadingHTTPServer(("127.0.0.1", p), Handler) for p in (0, hook_port)]
        for s in self.servers:
            threading.Thread(target=s.serve_forever, daemon=True).start()
        self.ingest_url = f"http://127.0.0.1:{self.servers[0].server_address[1]}"
        self.hook_url = f"http://127.0.0.1:{self.servers[1].server_address[1]}/in"

    def close(self) -> None:
        for s in self.servers:
            s.shutdown()
            s.server_close()


def fill(text: str, rx: Receivers) -> str:
    return text.replace("{ingest}", rx.ingest_url).replace("{hook}", rx.hook_url).replace("{root}", ROOT)


def source_of(b: Block, s: Dict[str, Any], rx: Receivers) -> str:
    text = b.text
    for old, new in SUBSTITUTE:
        text = text.replace(old, new)
    for old, new in s.get("edit", []):
        assert old in text, f"{b.where}: its SETUP edit no longer applies: {old!r}"
        text = text.replace(old, new)
    return fill(text, rx)


def run(cmd: List[str], cwd: str, env: Optional[Dict[str, str]] = None, timeout: int = 300) -> str:
    r = subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True,
                       text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} exited {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r.stdout


# --- runners: each gets the block's source (substituted) and its SETUP, in a temp dir ---

def run_python(src: str, s: Dict[str, Any], d: str, rx: Receivers) -> str:
    code = fill(str(s.get("prelude", "")), rx) + src + fill(str(s.get("postlude", "")), rx)
    # As pytest would: every test_* function the block defines is called.
    code += "\nfor _n, _f in list(globals().items()):\n    if _n.startswith('test_') and callable(_f):\n        _f()\n"
    open(os.path.join(d, "block.py"), "w").write(code)
    python = os.environ.get("OUTBOUND_DOCS_PYTHON", os.path.join(ROOT, ".venv/bin/python"))
    return run([python, "block.py"], d)


def run_js(src: str, s: Dict[str, Any], d: str, rx: Receivers) -> str:
    open(os.path.join(d, "block.js"), "w").write(str(s.get("prelude", "")) + src + str(s.get("postlude", "")))
    return run(["node", "block.js"], d)


def libdir() -> str:
    return os.path.abspath(os.environ.get("OUTBOUND_C_LIBDIR", os.path.join(ROOT, "target/debug")))


def run_c(src: str, s: Dict[str, Any], d: str, rx: Receivers) -> str:
    if "int main(" not in src:  # a fragment: inside a main, with the names it assumes
        src = ("#include <outbound.h>\n#include <stdio.h>\n#include <string.h>\n#include <time.h>\n"
               "int main(void) {\n" + str(s.get("prelude", "")) + src + str(s.get("postlude", "return 0;\n")) + "}\n")
    open(os.path.join(d, "block.c"), "w").write(src)
    # Statically, as the Go package links it (no SONAME link needed in a build directory).
    run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", os.path.join(ROOT, "include"), "block.c",
         "-L", libdir(), "-l:liboutbound.a", "-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl",
         "-o", "block"], d)
    return run(["./block"], d, {"OUTBOUND_WRITE_KEY": "wk_docs", "OUTBOUND_ENDPOINT": rx.ingest_url})


def go_env() -> Dict[str, str]:
    # cgo's cache does not look at the header or the library: their digest goes into the
    # flags, so a changed library is linked again (as scripts/test-go.sh does).
    digest = hashlib.sha256()
    for f in (os.path.join(ROOT, "include/outbound.h"), os.path.join(libdir(), "liboutbound.a")):
        if os.path.exists(f):
            digest.update(open(f, "rb").read())
    return {"CGO_ENABLED": "1", "CGO_CFLAGS": f"-g -O2 -DOUTBOUND_BUILD={digest.hexdigest()[:16]}",
            "CGO_LDFLAGS": f"-L{libdir()}", "GOPROXY": "off",
            "GOFLAGS": "-buildvcs=false -mod=mod", "GOTOOLCHAIN": "local"}


def run_go(src: str, s: Dict[str, Any], d: str, rx: Receivers) -> str:
    if "package main" not in src:  # a fragment: its imports on top, the rest inside main
        imports = [l for l in src.splitlines() if l.startswith("import ")]
        body = "\n".join(l for l in src.splitlines() if not l.startswith("import "))
        extra = "".join(f"import \"{i}\"\n" for i in s.get("imports", []))
        src = "package main\n\n" + "\n".join(imports) + "\n" + extra + "\nfunc main() {\n" + \
            str(s.get("prelude", "")) + body + "\n}\n"
    open(os.path.join(d, "main.go"), "w").write(src)
    env = go_env()
    run(["go", "mod", "init", "example.com/docblock"], d, env)
    # As the README says (v2 is a package of the same module).
    run(["go", "mod", "edit", "-require=outbound.invalid/bindings/go@v0.0.0",
         f"-replace=outbound.invalid/bindings/go={ROOT}/bindings/go"], d, env)
    run(["go", "build", "-o", "block", "."], d, env)
    return run(["./block"], d, {"OUTBOUND_WRITE_KEY": "wk_docs", "OUTBOUND_ENDPOINT": rx.ingest_url})


def rust_flags() -> List[str]:
    """--extern outbound=<rlib> and the -L paths its build used (cargo's JSON messages)."""
    out = subprocess.run(["cargo", "build", "-q", "-p", "outbound", "--message-format=json"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    rlib, paths = None, []
    for line in out.splitlines():
        m = json.loads(line)
        if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "outbound" and "lib" in m["target"]["kind"]:
            rlib = next(f for f in m["filenames"] if f.endswith(".rlib"))
        if m.get("reason") == "build-script-executed":
            paths += m.get("linked_paths", [])
    assert rlib, "cargo did not report the outbound rlib"
    deps = os.path.join(os.path.dirname(rlib), "deps")  # cargo reports the copy in target/<profile>
    return ["--extern", f"outbound={rlib}", "-L", f"dependency={deps}"] + [a for p in paths for a in ("-L", p)]


def run_rust(src: str, s: Dict[str, Any], d: str, rx: Receivers) -> str:
    open(os.path.join(d, "block.rs"), "w").write(src)
    test = "fn main(" not in src  # a block of #[test] functions runs as a test binary
    flags = json.loads(os.environ["OUTBOUND_DOCS_RUSTFLAGS"])
    run(["rustc", "--edition", "2021", "-C", "debuginfo=0", *(["--test"] if test else []),
         "block.rs", "-o", "block", *flags], d)
    return run(["./block"] + (["--test-threads=1"] if test else []), d)


def git_status() -> List[str]:
    """Every path git shows in the clone, untracked (??) and ignored (!!) ones too."""
    out = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    return out.splitlines()


def from_root(run_block: Callable[[str], str], creates: List[str]) -> str:
    """Runs a block in the clone's root, as the README says to, and fails if what it leaves
    there shows in `git status` (untracked, not ignored); then removes what it is known to
    make (`creates`; anything else new is only named: another process may have made it)."""
    mine = [p for p in creates if os.path.lexists(os.path.join(ROOT, p))]
    if mine:
        raise Skip(f"{', '.join(mine)} already in the clone's root: not overwritten")
    before = set(git_status())
    try:
        out = run_block(ROOT)
        made = [line for line in git_status() if line not in before]
        shown = [line for line in made if not line.startswith("!! ")]
        if shown:
            raise RuntimeError("run from the clone's root, it leaves files git shows "
                               f"(add them to .gitignore, or write elsewhere): {shown}")
    finally:
        for path in creates:
            full = os.path.join(ROOT, path)
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full, ignore_errors=True)
            elif os.path.lexists(full):
                os.remove(full)
    return out


def run_sh(src: str, s: Dict[str, Any], d: str, rx: Receivers) -> str:
    if s.get("from_root"):
        return from_root(lambda root: run_sh_in(src, s, d, rx, root), list(s["from_root"]))
    return run_sh_in(src, s, d, rx, d)


def run_sh_in(src: str, s: Dict[str, Any], d: str, rx: Receivers, cwd: str) -> str:
    if "pip install" in src:  # into a fresh environment, then import it from elsewhere
        if "--find-links dist " in src:  # "from the clone's root"
            if not glob.glob(os.path.join(ROOT, "dist", "outbound_events-*.whl")):
                raise Skip("no wheel in dist/ (a debug wheel is under test)")
            cwd = ROOT
        else:
            src = src.replace(f"{ROOT}/dist", os.path.dirname(os.environ["OUTBOUND_TEST_WHEEL"]))
        venv = tempfile.mkdtemp(prefix="docs-venv-")
        src = (f"set -e\npython3 -m venv {venv}\n. {venv}/bin/activate\n" + src +
               f"cd /tmp && python -c 'import outbound; print(outbound.__version__)'\nrm -rf {venv}\n")
    else:
        src = "set -e\n" + fill(str(s.get("prelude", "")), rx) + src + fill(str(s.get("postlude", "")), rx)
    open(os.path.join(d, "block.sh"), "w").write(src)
    env = go_env()
    relay = os.environ.get("OUTBOUND_RELAY_BIN", os.path.join(ROOT, "target/debug/outbound-relay"))
    env["PATH"] = os.path.dirname(os.path.abspath(relay)) + ":" + os.environ["PATH"]
    env["DOCS_TMP"] = d
    out = run(["bash", os.path.join(d, "block.sh")], cwd, env)
    if s.get("expect_out") and str(s["expect_out"]) not in out:
        raise RuntimeError(f"the output lacks {s['expect_out']}:\n{out}")
    return out


def run_toml(src: str, s: Dict[str, Any], d: str, rx: Receivers) -> str:
    """A relay config: the relay must start on it as written (and stop on SIGTERM)."""
    open(os.path.join(d, "relay.toml"), "w").write(src)
    relay = os.environ.get("OUTBOUND_RELAY_BIN", os.path.join(ROOT, "target/debug/outbound-relay"))
    p = subprocess.Popen([relay, "--config", "relay.toml"], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    addr = p.stdout.readline().strip() if p.stdout else ""
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    if not addr or p.returncode != 0:
        raise RuntimeError(f"the relay did not run on it (exit {p.returncode}):\n{err}")
    return addr


class Skip(Exception):
    pass


RUNNERS: Dict[str, Callable[[str, Dict[str, Any], str, Receivers], str]] = {
    "python": run_python, "js": run_js, "c": run_c, "go": run_go, "rust": run_rust,
    "sh": run_sh, "toml": run_toml,
}


def check(parts: List[str], netns: bool) -> int:
    ran, skipped, failed = 0, [], []
    for b in blocks():
        if part_of(b) not in parts:
            continue
        why = skip_reason(b)
        s = setup_of(b)
        if why is None and b.lang not in RUNNERS:
            failed.append((b, f"no runner for {b.lang or 'a block without a language'}: "
                              "add it to SKIP in scripts/check-docs.py with the reason"))
            continue
        if why is None and s.get("fixed_ports") and not netns:
            why = "uses fixed ports (as written), run only in a network namespace of its own"
        if why:
            skipped.append((b, why))
            continue
        rx = Receivers(int(s.get("receiver_at", 0)))
        d = tempfile.mkdtemp(prefix="docs-block-")
        src = source_of(b, s, rx)
        try:
            t0 = time.time()
            RUNNERS[b.lang](src, s, d, rx)
            time.sleep(0.1)
            got = {"hook": len(rx.hook), "ingest": len(rx.ingest)}
            for k, n in dict(s.get("expect", {})).items():
                if got[k] < n:
                    raise RuntimeError(f"{k} receiver got {got[k]} messages, expected at least {n}")
            print(f"ran   {b.where} in {time.time() - t0:.1f} s; received {got}")
            ran += 1
        except Skip as e:
            skipped.append((b, str(e)))
        except Exception as e:  # noqa: BLE001 (every failure is reported with its block)
            failed.append((b, f"{e}\n--- the block as run ---\n{src}"))
        finally:
            rx.close()
            shutil.rmtree(d, ignore_errors=True)
    for b, why in skipped:
        print(f"skip  {b.where}: {why}")
    for b, why in failed:
        print(f"FAIL  {b.where}: {why}", file=sys.stderr)
    print(f"docs ({', '.join(parts)}): {ran} blocks ran as written, {len(skipped)} skipped "
          f"(reasons above), {len(failed)} failed")
    return 1 if failed else 0


# The docs users read (ARCHITECTURE.md and CHANGELOG.md are the project's own; bench/log/ is
# where history goes).
USER_DOCS = ["README.md", "BENCHMARKS.md"] + sorted(glob.glob("docs/*.md", root_dir=ROOT))

# Words of our own history that mean nothing to a user: the tracker's numbers (there is no
# public tracker), the labels of internal runs and of the machines they ran on.
HISTORY = re.compile(r"\b(issues? #?\d+|stop \d+|machine [AB]\b)", re.IGNORECASE)


def check_text() -> int:
    """The user docs' text: every `cargo install` has --locked (without it cargo ignores
    Cargo.lock, takes newer dependencies than the ones tested and builds everything again),
    and no line carries our history (HISTORY)."""
    bad = []
    for doc in USER_DOCS:
        for n, line in enumerate(open(os.path.join(ROOT, doc), encoding="utf-8"), 1):
            if re.search(r"\bcargo install\b", line) and "--locked" not in line:
                bad.append(f"{doc}:{n}: `cargo install` without --locked: {line.strip()}")
            for m in HISTORY.finditer(line):
                bad.append(f"{doc}:{n}: {m.group(0)!r} is our history, not the user's "
                           f"(it goes to bench/log/ or git): {line.strip()}")
    for b in bad:
        print(f"FAIL  {b}", file=sys.stderr)
    print(f"docs' text: {len(USER_DOCS)} user docs, {len(bad)} problems")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", action="append", choices=["python", "c", "go", "rust", "relay"])
    ap.add_argument("--list", action="store_true", help="list the blocks and what happens to each")
    ap.add_argument("--text", action="store_true",
                    help="check the user docs' text (cargo install --locked, no history); runs nothing")
    a = ap.parse_args()
    if a.text:
        return check_text()
    if not a.part:
        ap.error("--part or --text is required")
    if a.list:
        for b in blocks():
            if part_of(b) in a.part:
                print(f"{b.where}: {skip_reason(b) or 'runs'}")
        return 0
    if "rust" in a.part and "OUTBOUND_DOCS_RUSTFLAGS" not in os.environ:
        os.environ["OUTBOUND_DOCS_RUSTFLAGS"] = json.dumps(rust_flags())  # before the namespace: cargo
    if os.environ.get(INSIDE):
        return check(a.part, netns=True)
    probe = ["unshare", "-rn", "sh", "-c", "ip link set lo up"]
    if shutil.which("unshare") and shutil.which("ip") and subprocess.run(probe, capture_output=True).returncode == 0:
        script = 'ip link set lo up && exec "$@"'
        return subprocess.run(["unshare", "-rn", "sh", "-c", script, "sh", sys.executable, *sys.argv],
                              env={**os.environ, INSIDE: "1"}).returncode
    print("docs: no network namespace here (unshare -rn): the blocks run with HTTP(S)_PROXY at a closed port")
    os.environ.update({"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
                       "ALL_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost"})
    return check(a.part, netns=False)


if __name__ == "__main__":
    sys.exit(main())
