"""Inline CSS the widgets share (a widget's HTML carries its own style: no stylesheet reaches the kernel)."""

# Long lines (a prompt, a tool's output) wrap between words and break a word only when it is longer than the line.
WRAP = "white-space:pre-wrap;overflow-wrap:break-word;word-break:normal"
