"""`python3 tests/redmine/redmine.py selftest`: start one Redmine, check
every API behaviour API_NOTES.md states (the adapter relies on them), stop
it. Exit status 0 when every check holds; each failing check is listed."""

import concurrent.futures
import json
import sys
import time
import uuid

import redmine

FAILED = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f"  -- {detail}"), flush=True)
    if not ok:
        FAILED.append(name)


def ids(answer):
    return [i["id"] for i in answer.json["issues"]]


def main(argv):
    t0 = time.monotonic()
    with redmine.Redmine() as rm:
        print(f"started in {rm.startup_seconds} s (ruby: {rm.settings['boot_seconds']}), "
              f"database from the {rm.built_from}, {rm.url}", flush=True)
        run(rm)
    print(f"selftest: {len(FAILED)} failed, {time.monotonic() - t0:.1f} s in all", flush=True)
    return 1 if FAILED else 0


def run(rm):
    cf = rm.custom_field_id
    st = rm.statuses
    dev_key = rm.developer["api_key"]
    tenant = str(uuid.uuid4())

    # -- authentication
    bad = "0" * 40
    a = rm.api("GET", "/users/current.json")
    check("good key: /users/current.json 200, admin", a.status == 200 and a.json["user"]["admin"], a)
    for method, path, body in (("GET", f"/issues.json?project_id={rm.project_id}", None),
                               ("GET", "/users/current.json", None),
                               ("POST", "/issues.json", {"issue": {"project_id": rm.project_id, "subject": "x"}})):
        a = rm.api(method, path, body, key=bad)
        check(f"wrong key: {method} {path} -> 401, empty body, WWW-Authenticate",
              a.status == 401 and a.body == b"" and "Redmine API" in a.headers.get("www-authenticate", ""), a)
    a = rm.api("GET", "/issues.json?status_id=*", key=bad)
    check("wrong key, list not scoped to the private project -> 200 and an EMPTY list (anonymous)",
          a.status == 200 and a.json["issues"] == [] and a.json["total_count"] == 0, a)
    a = rm.api("GET", "/issues.json", key="")
    check("no key, unscoped list -> 200 empty (login_required off)", a.status == 200 and a.json["total_count"] == 0, a)

    # -- create
    ref = f"tickets:{tenant}:create_ticket:KEY-1"
    a = rm.create_issue("Disk full on db-1", ref, description="d0")
    issue = a.json["issue"] if a.status == 201 else {}
    check("create -> 201 with Location and the issue", a.status == 201
          and a.headers.get("location", "").endswith(f"/issues/{issue.get('id')}")
          and a.content_type == "application/json; charset=utf-8", a)
    check("create: defaults tracker Bug, status New, priority Normal, author admin",
          issue.get("tracker", {}).get("name") == "Bug" and issue.get("status") == {"id": st["New"], "name": "New", "is_closed": False}
          and issue.get("priority", {}).get("id") == rm.default_priority_id and issue.get("author", {}).get("id") == rm.settings["admin"]["id"], issue)
    check("create: custom_fields echo the reference",
          issue.get("custom_fields") == [{"id": cf, "name": "External reference", "value": ref}], issue.get("custom_fields"))
    first_id = issue["id"]
    for method, body in (("GET", None), ("PUT", {"issue": {"notes": "x"}})):
        a = rm.api(method, f"/issues/{first_id}.json", body, key=bad)
        check(f"wrong key: {method} an existing issue -> 401", a.status == 401 and a.body == b"", a)
        a = rm.api(method, "/issues/999999.json", body, key=bad)
        check(f"wrong key: {method} an issue that does not exist -> 404 (not 401!)", a.status == 404 and a.body == b"", a)

    a = rm.api("POST", "/issues.json", {"issue": {"project_id": rm.project_id}})
    check("create without subject -> 422 Subject cannot be blank",
          a.status == 422 and a.json == {"errors": ["Subject cannot be blank"]}, a)
    a = rm.api("POST", "/issues.json", {"issue": {"subject": "no project"}})
    check("create without project -> 422 (Project, Tracker, Status cannot be blank)",
          a.status == 422 and a.json == {"errors": ["Project cannot be blank", "Tracker cannot be blank", "Status cannot be blank"]}, a)
    a = rm.api("POST", "/issues.json", {"issue": {"project_id": "no-such-project", "subject": "x"}})
    check("create in an unknown project -> 422 (same errors)", a.status == 422 and "Project cannot be blank" in a.json["errors"], a)
    a = rm.create_issue("x" * 256)
    check("subject of 256 chars -> 422 too long",
          a.status == 422 and a.json == {"errors": ["Subject is too long (maximum is 255 characters)"]}, a)
    a = rm.create_issue("é" * 255)
    check("subject of 255 (multi-byte) chars -> 201", a.status == 201, a)
    a = rm.create_issue("  padded  ")
    check("subject whitespace is kept", a.status == 201 and a.json["issue"]["subject"] == "  padded  ", a)
    a = rm.create_issue("unknown status", status_id=99)
    check("create with unknown status_id -> 201, status New (ignored)", a.status == 201 and a.json["issue"]["status"]["id"] == st["New"], a)
    a = rm.create_issue("closed at create", status_id=st["Closed"])
    check("create with status Closed -> 201, status New (ignored, even for the admin)",
          a.status == 201 and a.json["issue"]["status"]["id"] == st["New"], a)
    a = rm.create_issue("unknown priority", priority_id=99)
    check("create with unknown priority_id -> 422 Priority cannot be blank",
          a.status == 422 and a.json == {"errors": ["Priority cannot be blank"]}, a)
    a = rm.create_issue("unknown tracker", tracker_id=99)
    check("create with unknown tracker_id -> 201, default tracker (ignored)", a.status == 201 and a.json["issue"]["tracker"]["name"] == "Bug", a)
    a = rm.api("POST", "/issues.json", {"issue": {"project_id": rm.project_id, "subject": "unknown cf",
                                                   "custom_fields": [{"id": 999, "value": "v"}]}})
    check("create with an unknown custom field id -> 201, value dropped",
          a.status == 201 and a.json["issue"]["custom_fields"][0]["value"] is None, a)
    a = rm.create_issue("long ref", "y" * 70000)
    check("custom field value of 70000 chars -> 201 (no length limit unless max_length is set)",
          a.status == 201 and len(a.json["issue"]["custom_fields"][0]["value"]) == 70000, a)
    a = rm.api("POST", "/issues.json", b"{not json")
    check("invalid JSON -> 400 JSON body", a.status == 400 and a.json == {"status": 400, "error": "Bad Request"}, a)
    a = rm.api("POST", "/issues.json", {"issue": "string"})
    check("issue not an object -> 500 JSON body", a.status == 500 and a.json == {"status": 500, "error": "Internal Server Error"}, a)

    # -- search: exact, case, formats
    u = tenant
    refs = {
        "colon": f"tickets:{u}:create_ticket:KEY-1",   # = ref, created above
        "longer": f"tickets:{u}:create_ticket:KEY-10",
        "lower": f"tickets:{u}:create_ticket:key-1",
        "uuid": str(uuid.uuid4()),
        "slash": f"tickets/{u}/a-b",
        "pipe": f"tickets:{u}:k|x",
        "tilde": f"~{u}",
        "star": "*",
    }
    created = {"colon": first_id}
    for name, r in refs.items():
        if name != "colon":
            created[name] = rm.create_issue(f"ref {name}", r).json["issue"]["id"]
    for name in ("colon", "longer", "lower", "uuid", "slash"):
        a = rm.search_short(refs[name])
        check(f"short filter finds exactly its own issue ({name}: {refs[name]!r})",
              a.status == 200 and ids(a) == [created[name]] and a.json["total_count"] == 1, a)
        a = rm.search_exact(refs[name])
        check(f"explicit filter finds exactly its own issue ({name})", a.status == 200 and ids(a) == [created[name]], a)
    a = rm.search_short(refs["uuid"].upper())
    check("search is case-sensitive (SQLite; MySQL's default collation would not be)", a.json["total_count"] == 0, a)
    a = rm.search_short(f"tickets:{u}")
    check("no prefix/substring match with `=`", a.json["total_count"] == 0, a)
    a = rm.search_short(refs["pipe"])
    check("short filter: '|' splits the value into alternatives -> the issue is NOT found", a.json["total_count"] == 0, a)
    a = rm.search_exact(refs["pipe"])
    check("explicit filter: '|' taken literally -> found", ids(a) == [created["pipe"]], a)
    a = rm.search_short(refs["tilde"])
    check("short filter: a leading '~' is the 'contains' operator: '~<uuid>' matches every ref holding the uuid",
          set(ids(a)) == {created[n] for n in ("colon", "longer", "lower", "slash", "pipe", "tilde")}, a)
    a = rm.search_exact(refs["tilde"])
    check("explicit filter: '~<uuid>' taken literally", ids(a) == [created["tilde"]], a)
    a = rm.search_short("*")
    check("short filter value '*' = 'any value': every issue with a reference", a.json["total_count"] > 5, a)
    a = rm.search_exact("*")
    check("explicit filter '*' taken literally", ids(a) == [created["star"]], a)
    a = rm.search_short(f"  {refs['uuid']}  ")
    check("value is not trimmed when searching (padded search finds nothing)", a.json["total_count"] == 0, a)
    a = rm.search_short("")
    check("empty value -> 422 External reference cannot be blank",
          a.status == 422 and a.json == {"errors": ["External reference cannot be blank"]}, a)

    # -- unknown filters are ignored: the whole project comes back
    everything = rm.api("GET", f"/issues.json?project_id={rm.project_id}&status_id=*").json["total_count"]
    a = rm.api("GET", f"/issues.json?project_id={rm.project_id}&status_id=*&cf_999={refs['uuid']}")
    check("DANGER: filter on a custom field that does not exist (cf_999) is ignored -> ALL issues",
          a.status == 200 and a.json["total_count"] == everything > 1, a)
    a = rm.api("GET", f"/issues.json?project_id={rm.project_id}&status_id=*&f[]=cf_999&op[cf_999]==&v[cf_999][]=x")
    check("DANGER: same with the explicit syntax -> ALL issues", a.json["total_count"] == everything, a)
    a = rm.api("GET", f"/issues.json?project_id={rm.project_id}&status_id=*&cf_{cf}={refs['uuid']}&bogus=1")
    check("an unknown plain parameter is ignored too (the real filter still applies)", ids(a) == [created["uuid"]], a)

    # -- duplicates are allowed
    dup = rm.create_issue("dup", refs["uuid"])
    a = rm.search_short(refs["uuid"])
    check("Redmine does not enforce unique references: a second create makes a second issue",
          dup.status == 201 and sorted(ids(a)) == sorted([created["uuid"], dup.json["issue"]["id"]]), a)

    # -- closed issues and the status filter
    closing_ref = f"tickets:{u}:closing"
    cid = rm.create_issue("to close", closing_ref).json["issue"]["id"]
    a = rm.api("PUT", f"/issues/{cid}.json", {"issue": {"status_id": st["Closed"]}})
    check("close via PUT status_id -> 204 empty body", a.status == 204 and a.body == b"", a)
    a = rm.search_short(closing_ref, status=None)
    check("without status_id only OPEN issues match: the closed one is not found", a.json["total_count"] == 0, a)
    for s in ("*", "closed", str(st["Closed"])):
        a = rm.search_short(closing_ref, status=s)
        check(f"status_id={s} finds the closed issue", ids(a) == [cid], a)
    a = rm.search_short(closing_ref, status="open")
    check("status_id=open does not", a.json["total_count"] == 0, a)
    a = rm.search_exact(closing_ref)
    check("explicit syntax (f[]) has no default status filter: finds the closed issue", ids(a) == [cid], a)
    a = rm.api("GET", f"/issues/{cid}.json")
    check("GET /issues/ID.json shows a closed issue (is_closed, closed_on)",
          a.json["issue"]["status"]["is_closed"] is True and a.json["issue"]["closed_on"], a)

    # -- paging
    a = rm.api("GET", f"/issues.json?project_id={rm.project_id}&status_id=*&limit=1000")
    check("limit is capped at 100", a.json["limit"] == 100 and len(a.json["issues"]) == min(100, a.json["total_count"]), a)
    a = rm.api("GET", f"/issues.json?project_id={rm.project_id}&status_id=*")
    check("default limit 25, offset 0, newest first (id desc)",
          a.json["limit"] == 25 and a.json["offset"] == 0 and ids(a) == sorted(ids(a), reverse=True), a)
    page1 = ids(rm.api("GET", f"/issues.json?project_id={rm.project_id}&status_id=*&sort=id&limit=3&offset=0"))
    page2 = ids(rm.api("GET", f"/issues.json?project_id={rm.project_id}&status_id=*&sort=id&limit=3&offset=3"))
    check("offset/limit pages with sort=id ascending", len(page1) == 3 and len(page2) == 3 and page1[-1] < page2[0], (page1, page2))

    # -- update, notes, journals
    iid = first_id
    a = rm.api("PUT", f"/issues/{iid}.json", {"issue": {"notes": "only a note"}})
    check("PUT notes -> 204 empty body, no Content-Type", a.status == 204 and a.body == b"", a)
    rm.api("PUT", f"/issues/{iid}.json", {"issue": {"notes": "note plus changes", "subject": "Disk full v2",
                                                    "status_id": st["In Progress"], "priority_id": rm.priorities["High"]}})
    rm.api("PUT", f"/issues/{iid}.json", {"issue": {"subject": "Disk full v2"}})   # no change
    rm.api("PUT", f"/issues/{iid}.json", {"issue": {}})                           # nothing
    rm.api("PUT", f"/issues/{iid}.json", {"issue": {"notes": ""}})                # empty note
    rm.api("PUT", f"/issues/{iid}.json", {"issue": {"description": "d1"}})        # change without note
    rm.api("PUT", f"/issues/{iid}.json", {"issue": {"notes": "same"}})
    rm.api("PUT", f"/issues/{iid}.json", {"issue": {"notes": "same"}})
    a = rm.api("GET", f"/issues/{iid}.json?include=journals")
    j = a.json["issue"]["journals"]
    check("journals: 5 entries (no journal for a no-op, empty or empty-note PUT)", len(j) == 5, json.dumps(j)[:600])
    if len(j) == 5:
        check("journal keys: id, user, notes, created_on, private_notes, details",
              set(j[0]) == {"id", "user", "notes", "created_on", "private_notes", "details"}, j[0])
        check("PUT with only notes -> one journal, notes set, details []",
              j[0]["notes"] == "only a note" and j[0]["details"] == [], j[0])
        check("PUT notes + changes -> ONE journal holding the note and every detail",
              j[1]["notes"] == "note plus changes" and j[1]["details"] == [
                  {"property": "attr", "name": "subject", "old_value": "Disk full on db-1", "new_value": "Disk full v2"},
                  {"property": "attr", "name": "status_id", "old_value": str(st["New"]), "new_value": str(st["In Progress"])},
                  {"property": "attr", "name": "priority_id", "old_value": str(rm.default_priority_id), "new_value": str(rm.priorities["High"])},
              ], j[1])
        check("a change without notes -> journal with notes \"\" (empty string, not null)",
              j[2]["notes"] == "" and j[2]["details"][0]["name"] == "description", j[2])
        check("the same notes twice -> TWO journals (no dedup)", j[3]["notes"] == j[4]["notes"] == "same", j[3:])
        check("journals in ascending id order", [x["id"] for x in j] == sorted(x["id"] for x in j), j)
        check("created_on is UTC ISO-8601 with Z, to the second",
              all(len(x["created_on"]) == 20 and x["created_on"].endswith("Z") for x in j), j)
    a = rm.api("GET", f"/issues/{iid}.json")
    check("journals only with include=journals", "journals" not in a.json["issue"], a)
    a = rm.api("PUT", f"/issues/{iid}.json", {"issue": {"custom_fields": [{"id": cf, "value": ref + "-changed"}]}})
    a = rm.api("GET", f"/issues/{iid}.json?include=journals")
    check("custom field change -> detail property 'cf', name = the field id as a string",
          a.json["issue"]["journals"][-1]["details"] == [{"property": "cf", "name": str(cf), "old_value": ref, "new_value": ref + "-changed"}],
          a.json["issue"]["journals"][-1])
    a = rm.api("PUT", f"/issues/{iid}.json", {"issue": {"subject": ""}})
    check("PUT invalid subject -> 422 errors", a.status == 422 and a.json == {"errors": ["Subject cannot be blank"]}, a)
    a = rm.api("PUT", "/issues/999999.json", {"issue": {"notes": "x"}})
    check("PUT unknown issue -> 404, empty body, Content-Type application/json",
          a.status == 404 and a.body == b"" and a.content_type == "application/json", a)
    a = rm.api("GET", "/issues/999999.json")
    check("GET unknown issue -> 404, empty body", a.status == 404 and a.body == b"", a)

    # -- workflow
    a = rm.api("PUT", f"/issues/{iid}.json", {"issue": {"status_id": 99}})
    b = rm.api("GET", f"/issues/{iid}.json")
    check("PUT unknown status_id -> 204 and the status is UNCHANGED",
          a.status == 204 and b.json["issue"]["status"]["id"] == st["In Progress"], (a, b))
    wid = rm.create_issue("workflow", key=dev_key).json["issue"]["id"]
    a = rm.api("GET", f"/issues/{wid}.json?include=allowed_statuses", key=dev_key)
    check("developer from New: allowed_statuses = New, In Progress, Resolved, Feedback, Closed",
          [s["name"] for s in a.json["issue"]["allowed_statuses"]] == ["New", "In Progress", "Resolved", "Feedback", "Closed"], a)
    a = rm.api("PUT", f"/issues/{wid}.json", {"issue": {"status_id": st["Rejected"], "notes": "reject"}}, key=dev_key)
    b = rm.api("GET", f"/issues/{wid}.json?include=journals")
    check("developer New -> Rejected (not in the workflow): 204, status UNCHANGED, the note still saved",
          a.status == 204 and b.json["issue"]["status"]["id"] == st["New"]
          and [(x["notes"], x["details"]) for x in b.json["issue"]["journals"]] == [("reject", [])], b)
    rm.api("PUT", f"/issues/{wid}.json", {"issue": {"status_id": st["Closed"]}}, key=dev_key)
    a = rm.api("PUT", f"/issues/{wid}.json", {"issue": {"status_id": st["In Progress"]}}, key=dev_key)
    b = rm.api("GET", f"/issues/{wid}.json")
    check("developer cannot reopen a Closed issue: 204, still Closed",
          a.status == 204 and b.json["issue"]["status"]["id"] == st["Closed"], b)
    a = rm.api("GET", f"/issues/{wid}.json?include=allowed_statuses")
    check("admin: allowed_statuses = all six (admin bypasses workflow)", len(a.json["issue"]["allowed_statuses"]) == 6, a)
    moved = []
    for to in ("Rejected", "New", "Feedback", "Closed", "In Progress"):
        rm.api("PUT", f"/issues/{wid}.json", {"issue": {"status_id": st[to]}})
        moved.append(rm.api("GET", f"/issues/{wid}.json").json["issue"]["status"]["name"])
    check("admin moves Closed -> Rejected -> New -> Feedback -> Closed -> In Progress freely",
          moved == ["Rejected", "New", "Feedback", "Closed", "In Progress"], moved)

    # -- lists
    a = rm.api("GET", "/enumerations/issue_priorities.json", key=dev_key)
    check("/enumerations/issue_priorities.json (as developer): Low..Immediate, Normal is_default",
          [(p["name"], p["is_default"]) for p in a.json["issue_priorities"]] ==
          [("Low", False), ("Normal", True), ("High", False), ("Urgent", False), ("Immediate", False)], a)
    a = rm.api("GET", "/issue_statuses.json", key=dev_key)
    check("/issue_statuses.json (as developer): the six default statuses, Closed and Rejected closed",
          [(s["name"], s["is_closed"]) for s in a.json["issue_statuses"]] ==
          [("New", False), ("In Progress", False), ("Resolved", False), ("Feedback", False), ("Closed", True), ("Rejected", True)], a)
    a = rm.api("GET", "/custom_fields.json", key=dev_key)
    check("/custom_fields.json is admin-only (developer: 403 empty body)", a.status == 403 and a.body == b"", a)

    # -- error pages and content types
    a = rm.api("GET", "/no-such-page")
    check("unknown path without .json -> 404 HTML page", a.status == 404 and a.content_type.startswith("text/html") and b"<html" in a.body, a)
    a = rm.api("GET", "/no-such-page.json")
    check("unknown path with .json -> 404 JSON {status, error}",
          a.status == 404 and a.json == {"status": 404, "error": "Not Found"}, a)

    # -- throughput, and concurrency (serialized by the kit)
    t = time.monotonic()
    for i in range(100):
        assert rm.create_issue(f"rate {i}", f"rate-{u}-{i}").status == 201
    dt = time.monotonic() - t
    print(f"info 100 sequential creates: {dt:.1f} s ({100 / dt:.0f}/s)", flush=True)
    t = time.monotonic()
    for i in range(0, 100, 2):
        assert rm.search_short(f"rate-{u}-{i}").json["total_count"] == 1
    print(f"info 50 sequential searches: {time.monotonic() - t:.1f} s", flush=True)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda i: rm.create_issue(f"par {i}", f"par-{u}-{i}").status, range(40)))
    check("40 creates on 8 threads: all 201 (requests are serialized; no SQLite 'database is locked')",
          statuses == [201] * 40, {s: statuses.count(s) for s in set(statuses)})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
