"""The human channel: ask_human / reply_to_human go through stdin in the CLI, a widget in notebooks,
and a script in tests."""

from __future__ import annotations

import asyncio
import sys
from typing import Protocol

from toolkit.agent.tools.base import tool
from toolkit.core.printable import show


class Channel(Protocol):
    async def ask(self, question: str) -> str: ...

    async def tell(self, message: str) -> None: ...


class StdinChannel:
    """The human channel on a terminal: the agent's questions and messages on stderr, through ``show`` (a
    model's text cannot clear the screen, fake a prompt or write the clipboard), answers from stdin."""

    async def ask(self, question: str) -> str:
        show(f"\n[agent asks] {question}", file=sys.stderr)
        return (await asyncio.to_thread(sys.stdin.readline)).strip()

    async def tell(self, message: str) -> None:
        show(f"\n[agent says] {message}", file=sys.stderr)


class ScriptedChannel:
    """Answers from a list, in order; ``"(no answer)"`` when the list runs out. Keeps what was said."""

    def __init__(self, answers: list[str] | None = None):
        self.answers = list(answers or [])
        self.asked: list[str] = []
        self.told: list[str] = []

    async def ask(self, question: str) -> str:
        self.asked.append(question)
        return self.answers.pop(0) if self.answers else "(no answer)"

    async def tell(self, message: str) -> None:
        self.told.append(message)


class Human:
    def __init__(self, channel: Channel):
        self.channel = channel

    @tool
    async def ask_human(self, question: str) -> str:
        """Ask the human a question and wait for the answer.

        Args:
            question: what you need to know.
        """
        return f"Human: {await self.channel.ask(question)}"

    @tool
    async def reply_to_human(self, content: str) -> str:
        """Tell the human something (a result, a summary); does not wait.

        Args:
            content: the message.
        """
        await self.channel.tell(content)
        return "Sent."
