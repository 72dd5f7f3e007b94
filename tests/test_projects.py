"""The Chapter 9 projects registry (sl.projects): well formed, and report / checklist / check_numbers behave as
the chapter and the class grader rely on."""
import math

import pytest
import torch

import staircase_lib as sl
from staircase_lib import projects


def test_six_projects_in_chapter_order_each_with_a_deliverable_and_a_rubric():
    assert list(projects.PROJECTS) == [f"proj-9.{k}" for k in range(1, 7)]
    for project_id, project in projects.PROJECTS.items():
        assert project.id == project_id
        assert project.title and project.question and project.deliverable
        assert len(project.rubric) >= 3 and all(item.points > 0 and item.criterion for item in project.rubric)
        assert project.points == sum(item.points for item in project.rubric)
        names = [e.name for e in project.expected]
        assert len(names) == len(set(names)), f"{project_id}: duplicate expected names"
        for expected in project.expected:
            assert expected.name.isidentifier(), expected.name  # a keyword of report()
            assert math.isfinite(expected.low) and math.isfinite(expected.high) and expected.low < expected.high
            assert expected.meaning
        # a project without an expected number says why; one with numbers says at which settings they hold
        assert project.note if not project.expected else project.setting, project_id


def test_expected_ranges_exclude_what_a_wrong_study_gives():
    # the measured wrong studies of scripts/ch9_project_ranges.py: swapped arms (P2) and large init (P5)
    assert not projects.check_numbers("proj-9.2", {"speedup": 0.2})[0][2]
    rows = projects.check_numbers("proj-9.5", {"t1_over_t0": 0.4, "top_share": 0.066})
    assert not any(inside for _, _, inside in rows)
    # an untrained model has no stair, so no number
    assert not projects.check_numbers("proj-9.3", {"adam_ratio": float("nan")})[0][2]


def test_report_records_prints_and_checks(capsys):
    values = projects.report("proj-9.5", t1_over_t0=6.5, top_share=torch.tensor(0.05))
    assert values == {"t1_over_t0": 6.5, "top_share": pytest.approx(0.05)}
    assert projects.REPORTED["proj-9.5"] == values
    out = capsys.readouterr().out
    assert "t1_over_t0: 6.5" in out and "in range" in out and "OUT OF RANGE" in out
    projects.report("proj-9.2")  # nothing reported yet: listed as not reported
    assert "not reported" in capsys.readouterr().out
    rows = projects.check_numbers("proj-9.2", {})
    assert rows[0][1] is None and rows[0][2] is False


def test_checklist_lists_every_rubric_item_expected_number_and_note():
    for project in projects.PROJECTS.values():
        text = projects.checklist(project.id)
        assert text.startswith(f"### {project.id}") and f"({project.points} points)" in text
        assert text.count("- [ ]") == len(project.rubric)
        for expected in project.expected:
            assert f"`{expected.name}` in [{expected.low:g}, {expected.high:g}]" in text
        if project.note:
            assert project.note in text
        plain = projects.checklist(project.id, heading=False)
        assert plain.startswith(f"**Rubric of {project.id}** ({project.points} points)") and "###" not in plain


@pytest.mark.parametrize("call, error, argument", [
    (lambda: projects.report(9.1), TypeError, "project_id"),
    (lambda: projects.report("proj-9.9"), ValueError, "project_id"),
    (lambda: projects.checklist("9.1"), ValueError, "project_id"),
    (lambda: projects.check_numbers(None, {}), TypeError, "project_id"),
    (lambda: projects.checklist("proj-9.1", heading="no"), TypeError, "heading"),
    (lambda: projects.report("proj-9.2", speed_up=5.0), ValueError, "speed_up"),
    (lambda: projects.report("proj-9.2", speedup="5"), TypeError, "speedup"),
    (lambda: projects.report("proj-9.2", speedup=True), TypeError, "speedup"),
    (lambda: projects.report("proj-9.2", speedup=torch.ones(3)), TypeError, "speedup"),
])
def test_bad_input_raises_naming_the_argument(call, error, argument):
    with pytest.raises(error, match=argument):
        call()


def test_library_exposes_the_registry():
    assert sl.projects.PROJECTS is projects.PROJECTS
