"""The agent's plan: an ordered list of tasks, one current; its status goes into every step's prompt."""

from __future__ import annotations

from dataclasses import dataclass, field

from toolkit.prompting.structured_call import render
from toolkit.agent.tools.base import ToolError, tool


@dataclass
class Task:
    task_id: str
    instruction: str
    dependent_task_ids: list[str] = field(default_factory=list)
    done: bool = False


class Plan:
    def __init__(self) -> None:
        self.tasks: list[Task] = []

    @property
    def current(self) -> Task | None:
        return next((t for t in self.tasks if not t.done), None)

    def status(self) -> str:
        """The plan in the step prompt (``prompts/agent/plan.j2``)."""
        current = self.current
        return render("agent/plan.j2", tasks=self.tasks, current=current.task_id if current else None)

    @tool
    def append_task(self, task_id: str, instruction: str, dependent_task_ids: list[str] | None = None) -> str:
        """Add a task at the end of the plan.

        Args:
            task_id: a short unique id such as "1".
            instruction: what the task must achieve.
            dependent_task_ids: ids of tasks that must be done first.
        """
        if any(t.task_id == task_id for t in self.tasks):
            raise ToolError(f"task {task_id} exists; use replace_task")
        unknown = [d for d in dependent_task_ids or [] if not any(t.task_id == d for t in self.tasks)]
        if unknown:
            raise ToolError(f"unknown dependencies {unknown}")
        self.tasks.append(Task(task_id, instruction, list(dependent_task_ids or [])))
        return self.status()

    @tool
    def replace_task(self, task_id: str, instruction: str) -> str:
        """Change a task's instruction and mark it (and the tasks after it) not done.

        Args:
            task_id: the task to change.
            instruction: its new instruction.
        """
        index = self._index(task_id)
        self.tasks[index].instruction = instruction
        for t in self.tasks[index:]:
            t.done = False
        return self.status()

    @tool
    def reset_task(self, task_id: str) -> str:
        """Mark a task (and the tasks after it) not done, to redo it.

        Args:
            task_id: the task to redo.
        """
        for t in self.tasks[self._index(task_id):]:
            t.done = False
        return self.status()

    @tool
    def finish_current_task(self) -> str:
        """Mark the current task done and move to the next."""
        if self.current is None:
            raise ToolError("there is no unfinished task")
        self.current.done = True
        return self.status()

    def _index(self, task_id: str) -> int:
        for i, t in enumerate(self.tasks):
            if t.task_id == task_id:
                return i
        raise ToolError(f"no task {task_id}; tasks are {[t.task_id for t in self.tasks]}")
