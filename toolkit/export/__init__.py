"""Exports the field's own tools read, and a replay a person can look at.

One module per target: ``kaggle`` (Kaggle Game Arena werewolf replay JSON), ``inspect_log`` (an Inspect AI
``EvalLog``), ``mini`` (mini-swe-agent ``.traj.json``), ``otel`` (OpenTelemetry GenAI spans, OTLP JSON or
OTLP/HTTP), ``hf`` (a Hugging Face ``datasets`` folder), ``html`` (the self-contained replay page). Each reads
the tables ``toolkit.record.load.load`` returns; none needs the target tool to write, except ``inspect_log``
(Inspect's own writer) and ``otel`` (the OpenTelemetry SDK), both in the ``interop`` extra. Secrets stay
masked (``toolkit.core.secrets.redact`` runs over everything written) and ``content=False`` leaves message
contents (speech, prompts, answers, thoughts, tool outputs) out.
"""

FORMATS = ("kaggle", "inspect", "mini", "otel", "hf")
