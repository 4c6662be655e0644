"""A real Redmine on loopback for tests and CI (standard library only).

    python3 tests/redmine/redmine.py serve      # one instance, settings as one JSON line
    python3 tests/redmine/redmine.py selftest   # start one, check the API, stop it

    from redmine import Redmine                 # with tests/redmine on sys.path
    with Redmine() as rm:                       # fresh instance under target/
        rm.api("POST", "/issues.json", {"issue": {...}})

Each instance is Debian's packaged Redmine (`apt-get install redmine
redmine-sqlite`, code in /usr/share/redmine) run by boot.rb in one Ruby
process, with every file of its own under its run directory
(target/redmine-…/): config/database.yml and secret_key.txt, a copy of the
package's freshly installed SQLite database, log/, tmp/, files/. Nothing of
the package's own instance (/var/lib/redmine/default, its database under
/var/lib/dbconfig-common) is written. The process is started in a session of
its own and stopped by its process-group id (its pid); it also stops by
itself when the Python process that started it dies.
"""

import contextlib
import fcntl
import itertools
import json
import os
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import services  # noqa: E402  (wait_for, ROOT)

HERE = os.path.dirname(os.path.abspath(__file__))
BOOT = os.path.join(HERE, "boot.rb")
HOME = "/usr/share/redmine"
GEMFILE_LOCAL = os.path.join(HOME, "Gemfile.local")
# The database dbconfig-common makes on install (migrated, default data:
# trackers, statuses, priorities, roles, workflows, user admin).
PACKAGE_DB = "/var/lib/dbconfig-common/sqlite3/redmine/instances/default/redmine_default"
PACKAGES = ("redmine", "redmine-sqlite", "ruby-webrick")
WEBRICK_LINE = 'gem "webrick"  # added by tests/redmine/redmine.py: a Rack server for boot.rb\n'

_counter = itertools.count()


# ---------------------------------------------------------------- install


def _installed(pkg):
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True
    ).stdout
    return out.strip() == "install ok installed"


def install():
    """Debian's Redmine with SQLite and WEBrick, installed if missing, and
    `gem "webrick"` in /usr/share/redmine/Gemfile.local (added only if
    absent). Idempotent; serialized by a lock file so parallel runs on a
    clean machine do not race apt or bundler."""
    lock_path = os.path.join(services.ROOT, "target", "redmine-install.lock")
    os.makedirs(os.path.dirname(lock_path), exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = [p for p in PACKAGES if not _installed(p)]
        if missing:
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            subprocess.run(["apt-get", "update", "-q"], env=env, check=True)
            subprocess.run(["apt-get", "install", "-y", "-q", *PACKAGES], env=env, check=True)
        current = open(GEMFILE_LOCAL).read() if os.path.exists(GEMFILE_LOCAL) else ""
        if not re.search(r"""^\s*gem\s+['"]webrick['"]""", current, re.M):
            with open(GEMFILE_LOCAL, "a") as f:
                if current and not current.endswith("\n"):
                    f.write("\n")
                f.write(WEBRICK_LINE)
        # Let Bundler resolve once (it rewrites Gemfile.lock, a link to
        # /var/lib/redmine/Gemfile.lock, when the Gemfile changed), here under
        # the lock rather than in parallel boots.
        lock_file = os.path.join(HOME, "Gemfile.lock")
        resolved = os.path.exists(lock_file) and re.search(
            r"^DEPENDENCIES\n(?:  .*\n)*  webrick\b", open(lock_file).read(), re.M
        )
        if not resolved:
            subprocess.run(
                ["ruby", "-e", 'require "bundler/setup"; require "webrick"'],
                env=dict(os.environ, BUNDLE_GEMFILE=os.path.join(HOME, "Gemfile")),
                cwd=HOME,
                check=True,
            )


def _package_db_is_pristine():
    """True when the package's database holds only the default data (no
    project, issue, custom field or token yet): then a copy of it is a fresh
    Redmine. Otherwise someone used the package's own instance and
    the run builds its database from the migrations instead (slower)."""
    try:
        db = sqlite3.connect(f"file:{PACKAGE_DB}?mode=ro", uri=True)
        with contextlib.closing(db):
            counts = [
                db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("projects", "issues", "custom_fields", "tokens")
            ]
            users = db.execute("SELECT count(*) FROM users WHERE type = 'User'").fetchone()[0]
        return counts == [0, 0, 0, 0] and users == 1
    except sqlite3.Error:
        return False


# ---------------------------------------------------------------- HTTP


class Answer:
    """One HTTP answer: status (0 when nothing answered), headers (lower-case
    names), raw body, and `json` (None when the body is not JSON)."""

    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None

    @property
    def content_type(self):
        return self.headers.get("content-type", "")

    def __repr__(self):
        return f"<{self.status} {self.content_type} {self.body[:200]!r}>"


def request(method, url, body=None, headers=None, timeout=30):
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None and "Content-Type" not in (headers or {}):
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return Answer(r.status, {k.lower(): v for k, v in r.headers.items()}, r.read())
    except urllib.error.HTTPError as e:
        return Answer(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())
    except OSError as e:
        return Answer(0, {}, str(e).encode())


# ---------------------------------------------------------------- instance


class Redmine:
    """One fresh Redmine instance, as a context manager.

    run_dir: its files; made fresh (emptied). Default: a new
    target/redmine-<pid>-<n>/, removed when the block ends without an
    exception (kept, with its logs, otherwise). An explicit run_dir is kept.

    After start: url, api_key (admin), project_id (numeric),
    project_identifier ("tickets"), custom_field_id ("External reference"),
    statuses / priorities / trackers (name -> id), closed_status_ids,
    default_priority_id, developer (a non-admin member with role Developer:
    id, login, api_key), settings (everything boot.rb reported),
    startup_seconds, pid.
    """

    def __init__(self, run_dir=None, *, port=0, login_required=False, from_scratch=False,
                 eager_load=False, boot_timeout=300):
        self._auto_dir = run_dir is None
        if run_dir is None:
            run_dir = os.path.join(
                services.ROOT, "target", f"redmine-{os.getpid()}-{next(_counter)}"
            )
        self.run_dir = os.path.abspath(run_dir)
        self.port = port
        self.login_required = login_required
        self.from_scratch = from_scratch
        self.eager_load = eager_load
        self.boot_timeout = boot_timeout
        self.proc = None

    # -- lifecycle

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type, *_):
        self.stop()
        if self._auto_dir and exc_type is None:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        elif exc_type is not None and not issubclass(exc_type, (KeyboardInterrupt, SystemExit)):
            print(f"redmine: logs kept in {self.run_dir}/log", file=sys.stderr)

    def _write_instance_files(self):
        d = self.run_dir
        shutil.rmtree(d, ignore_errors=True)
        for sub in ("config", "db", "log", "tmp/cache", "files", "public/plugin_assets"):
            os.makedirs(os.path.join(d, sub))
        db = os.path.join(d, "db", "redmine.sqlite3")
        with open(os.path.join(d, "config", "database.yml"), "w") as f:
            # JSON is YAML. boot.rb serializes requests; `timeout` covers the
            # rest (e.g. someone reading the file with sqlite3 meanwhile).
            json.dump({"production": {"adapter": "sqlite3", "database": db,
                                      "timeout": 10000, "pool": 16, "encoding": "utf8"}}, f)
        with open(os.path.join(d, "config", "secret_key.txt"), "w") as f:
            f.write(secrets.token_hex(32))
        with open(os.path.join(d, "config", "configuration.yml"), "w") as f:
            json.dump({"production": {"attachments_storage_path": os.path.join(d, "files"),
                                      "email_delivery": {"delivery_method": "test"}}}, f)
        if self.from_scratch or not _package_db_is_pristine():
            open(db, "w").close()  # boot.rb migrates it and loads the default data
            self.built_from = "migrations"
        else:
            src = sqlite3.connect(f"file:{PACKAGE_DB}?mode=ro", uri=True)
            dst = sqlite3.connect(db)
            with contextlib.closing(src), contextlib.closing(dst):
                src.backup(dst)  # a consistent copy even if the package's instance is running
            self.built_from = "package database"

    def start(self):
        install()
        t0 = time.monotonic()
        self._write_instance_files()
        settings_file = os.path.join(self.run_dir, "settings.json")
        env = dict(
            os.environ,
            REDMINE_KIT_DIR=self.run_dir,
            REDMINE_KIT_PORT=str(self.port),
            REDMINE_KIT_SETTINGS=settings_file,
            REDMINE_KIT_EAGER="1" if self.eager_load else "0",
            REDMINE_KIT_LOGIN_REQUIRED="1" if self.login_required else "0",
        )
        for var in ("RAILS_ENV", "REDMINE_INSTANCE", "X_DEBIAN_SITEID", "DATABASE_URL",
                    "BUNDLE_GEMFILE", "SECRET_KEY_BASE"):
            env.pop(var, None)
        log = open(os.path.join(self.run_dir, "log", "boot.log"), "w")
        with log:
            self.proc = subprocess.Popen(
                ["ruby", BOOT], cwd=self.run_dir, env=env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )

        def settings_written():
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"Redmine exited with {self.proc.returncode} while starting; "
                    f"see {self.run_dir}/log/boot.log:\n{self._tail('boot.log')}"
                )
            with open(settings_file) as f:
                return json.load(f)

        self.settings = services.wait_for("Redmine writes its settings", settings_written,
                                          self.boot_timeout)
        s = self.settings
        self.pid = s["pid"]
        self.url = f"http://127.0.0.1:{s['port']}"
        self.api_key = s["admin"]["api_key"]
        self.project_id = s["project"]["id"]
        self.project_identifier = s["project"]["identifier"]
        self.custom_field_id = s["custom_field_id"]
        self.statuses = s["statuses"]
        self.closed_status_ids = s["closed_status_ids"]
        self.priorities = s["priorities"]
        self.default_priority_id = s["default_priority_id"]
        self.trackers = s["trackers"]
        self.developer = s["developer"]
        services.wait_for(
            "Redmine answers the API",
            lambda: self.api("GET", f"/issues.json?project_id={self.project_id}&limit=1").status == 200,
            60,
        )
        self.startup_seconds = round(time.monotonic() - t0, 2)
        return self

    def stop(self):
        """Stop what start() started: its process group (the group id is its
        pid), TERM then KILL. The group is signalled only while the leader is
        not yet reaped, so the id cannot belong to anyone else."""
        proc, self.proc = self.proc, None
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            # Exited (a zombie, still holding its pid) or not: do not reap yet.
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG):
                break
            time.sleep(0.05)
        # Anything left in its group (it starts no children normally).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def _tail(self, name, lines=30):
        try:
            with open(os.path.join(self.run_dir, "log", name), errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    # -- API

    def api(self, method, path, body=None, key=None, headers=None):
        """An Answer to one API call, authenticated with `key` (default: the
        admin's key; "" for none)."""
        h = dict(headers or {})
        key = self.api_key if key is None else key
        if key:
            h["X-Redmine-API-Key"] = key
        return request(method, self.url + path, body, h)

    def create_issue(self, subject, ref=None, key=None, **fields):
        issue = {"project_id": self.project_id, "subject": subject, **fields}
        if ref is not None:
            issue["custom_fields"] = [{"id": self.custom_field_id, "value": ref}]
        return self.api("POST", "/issues.json", {"issue": issue}, key=key)

    def search_short(self, ref, status="*", key=None):
        """GET /issues.json?project_id=…&cf_N=<ref>&status_id=<status>: the
        short filter syntax. Careful: Redmine parses the value (a leading
        `~ ! * ^ $ …` is an operator, `|` separates alternatives), see
        API_NOTES.md."""
        q = {"project_id": self.project_id, f"cf_{self.custom_field_id}": ref}
        if status is not None:
            q["status_id"] = status
        return self.api("GET", "/issues.json?" + urllib.parse.urlencode(q), key=key)

    def search_exact(self, ref, key=None, limit=100):
        """The explicit filter syntax, which takes the value literally:
        f[]=cf_N&op[cf_N]==&v[cf_N][]=<ref>; with f[] there is no default
        "open" status filter, so closed issues are included."""
        cf = f"cf_{self.custom_field_id}"
        q = [("project_id", self.project_id), ("set_filter", "1"), ("f[]", cf),
             (f"op[{cf}]", "="), (f"v[{cf}][]", ref), ("sort", "id"), ("limit", limit)]
        return self.api("GET", "/issues.json?" + urllib.parse.urlencode(q), key=key)

    def public_settings(self):
        """What `serve` prints."""
        return {
            "url": self.url,
            "api_key": self.api_key,
            "project_id": self.project_id,
            "project_identifier": self.project_identifier,
            "custom_field_id": self.custom_field_id,
            "statuses": self.statuses,
            "closed_status_ids": self.closed_status_ids,
            "priorities": self.priorities,
            "default_priority_id": self.default_priority_id,
            "trackers": self.trackers,
            "developer": self.developer,
            "login_required": self.settings["login_required"],
            "redmine_version": self.settings["redmine_version"],
            "pid": self.pid,
            "run_dir": self.run_dir,
            "database_from": self.built_from,
            "startup_seconds": self.startup_seconds,
        }


# ---------------------------------------------------------------- commands


def serve(argv):
    import argparse

    p = argparse.ArgumentParser(prog="redmine.py serve")
    p.add_argument("--port", type=int, default=0, help="default: any free port")
    p.add_argument("--run-dir", default=os.path.join(services.ROOT, "target", "redmine-serve"))
    p.add_argument("--login-required", action="store_true")
    p.add_argument("--from-scratch", action="store_true",
                   help="build the database from the migrations instead of copying the package's")
    a = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # A shell's background job starts with SIGINT ignored; take it back.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with Redmine(a.run_dir, port=a.port, login_required=a.login_required,
                 from_scratch=a.from_scratch) as rm:
        print(json.dumps(rm.public_settings()), flush=True)
        try:
            while rm.proc.poll() is None:
                time.sleep(1)
            print(f"redmine: the server exited ({rm.proc.returncode})", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 0


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "serve":
        return serve(sys.argv[2:])
    if cmd == "selftest":
        import selftest

        return selftest.main(sys.argv[2:])
    if cmd == "install":
        install()
        return 0
    print(__doc__.split("\n\n")[0], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
