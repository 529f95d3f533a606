"""The diffs of an engineer session, read from its trajectory: an edit's replaced lines come from its arguments
and the editor's earlier view of the file, a line no view showed is marked, a failed edit has no diff, and a
printed ``git diff`` is shown as printed."""

from toolkit.export.edits import session_diffs, views

VIEW = ("Command Editor.open_file executed:\n[File: a.py (5 lines total)]\n"
        "   1|one\n   2|two\n   3|three\n   4|four\n   5|five")


def step(n, name, args, output):
    return {"step": n, "thought": "", "commands": [{"command_name": name, "args": args}], "observations": [output]}


def replace(first, last, first_text, last_text, new):
    return {"path": "a.py", "first_replaced_line_number": first, "first_replaced_line_content": first_text,
            "last_replaced_line_number": last, "last_replaced_line_content": last_text, "new_content": new}


def test_views_reads_the_numbered_lines_of_each_file_shown():
    assert views(VIEW) == {"a.py": {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}}
    assert views("no file here") == {}


def test_a_replace_takes_its_middle_lines_from_the_last_view_and_marks_what_no_view_showed():
    memory = [step(1, "Editor.open_file", {"path": "a.py"}, VIEW),
              step(2, "Editor.edit_file_by_replace", replace(2, 4, "two", "four", "TWO\nFOUR"),
                   "Command executed:\n[File: a.py (4 lines total)]\n   1|one\n   2|TWO\n   3|FOUR\n   4|five"),
              step(3, "Editor.edit_file_by_replace", replace(1, 4, "one", "five", "x"), "Command executed:")]
    diffs = session_diffs(memory)
    assert [t for k, t in diffs[(2, 0)] if k in ("del", "add")] == ["-two", "-three", "-four", "+TWO", "+FOUR"]
    assert diffs[(2, 0)][2] == ("hunk", "@@ -2,3 +2,2 @@")
    # the view after step 2 shows the new lines 2 and 3: the diff of step 3 knows them
    assert [t for k, t in diffs[(3, 0)] if k == "del"] == ["-one", "-TWO", "-FOUR", "-five"]
    memory[1]["observations"] = ["Command executed: (no view)"]  # nothing seen since the edit: lines 2-3 unknown
    gaps = [t for k, t in session_diffs(memory)[(3, 0)] if k == "gap"]
    assert gaps == ["… line 2 and after, not shown before the edit"]


def test_a_failed_edit_has_no_diff_and_inserts_and_new_files_do():
    memory = [step(1, "Editor.edit_file_by_replace", replace(1, 1, "zero", "zero", "x"),
                   "Editor.edit_file_by_replace: line 1 of a.py is 'one', not 'zero'"),
              step(2, "Editor.insert_content_at_line", {"path": "a.py", "line_number": 3, "content": "new"}, VIEW),
              step(3, "Editor.create_file", {"path": "b.py", "content": "x = 1\n"}, "ok")]
    diffs = session_diffs(memory, ok={(1, 0): False, (2, 0): True, (3, 0): True})
    assert (1, 0) not in diffs
    assert diffs[(2, 0)][2:] == [("hunk", "@@ -3,0 +3,1 @@"), ("add", "+new")]
    assert diffs[(3, 0)][0] == ("file", "--- /dev/null") and diffs[(3, 0)][-1] == ("add", "+x = 1")


def test_a_printed_git_diff_is_shown_as_printed():
    out = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-one\n+ONE"
    diffs = session_diffs([step(1, "Terminal.run_command", {"cmd": "git diff"}, out),
                           step(2, "Terminal.run_command", {"cmd": "ls"}, "a.py")])
    assert [k for k, _ in diffs[(1, 0)]] == ["file", "file", "file", "hunk", "del", "add"] and (2, 0) not in diffs
