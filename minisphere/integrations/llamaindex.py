"""LlamaIndex adapter (`pip install 'minisphere[llamaindex]'`): a memory block for
LlamaIndex's `Memory`, so messages that leave the short-term chat history are kept in the
workspace and come back when the conversation touches them again.

    from llama_index.core.memory import Memory
    from minisphere.integrations.llamaindex import MinisphereMemoryBlock
    memory = Memory.from_defaults(session_id="chat-1", token_limit=4000,
                                  memory_blocks=[MinisphereMemoryBlock(workspace=ws)])

`put` (Memory calls it with the messages it flushes) captures each message with text as an
episodic entry, `"<role>: <text>"`, tagged with the block's `tag`; an exact repeat is not
stored twice (capture blocks duplicates). `get` recalls with the text of the latest
`query_messages` messages and answers the recalled entries as a bullet list, which Memory
puts into the system message; no message, or nothing recalled, answers "".

Works offline: Memory's default tokenizer is tiktoken's cl100k_base, whose encoding
llama-index-core ships in its package (`_static/tiktoken_cache`), and nothing here touches
NLTK. `Memory.get` (sync) runs the block on a loop of its own, so give an async handle only
to a Memory used through `aget`/`aput`. Calls go through the handle, so they inherit its
overload retry (`overload_retries=` of the client that made it).
"""

from __future__ import annotations

from typing import Any, Optional

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory.memory import BaseMemoryBlock
from pydantic import Field

from minisphere.engine import constants as C
from minisphere.integrations.handles import acall, as_wire

DEFAULT_TOP_K = 5
DEFAULT_QUERY_MESSAGES = 3
SOURCE = "llamaindex"


class MinisphereMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory in a Mini-Sphere workspace (see the module docstring)."""

    name: str = "minisphere"
    description: Optional[str] = "Entries recalled from the agent's Mini-Sphere workspace."
    workspace: Any = Field(description="a workspace handle of the HTTP or in-cluster client")
    top_k: int = Field(default=DEFAULT_TOP_K, ge=1, le=C.RECALL_MAX_TOP_K)
    tag: Optional[str] = Field(
        default="chat",
        description="tag of captured messages and the recall prefilter; None: neither",
    )
    query_messages: int = Field(default=DEFAULT_QUERY_MESSAGES, ge=1)

    async def _aget(self, messages: Optional[list[ChatMessage]] = None, **block_kwargs: Any) -> str:
        texts = [_text(m) for m in (messages or [])[-self.query_messages :]]
        query = " ".join(t for t in texts if t)[-C.MAX_QUERY_CHARS :]
        if not query.strip():
            return ""
        answer = as_wire(
            await acall(self.workspace, "recall", query, top_k=self.top_k, tag=self.tag)
        )
        return "\n".join(f"- {item['content']}" for item in answer["items"])

    async def _aput(self, messages: list[ChatMessage]) -> None:
        tags = [self.tag] if self.tag else []
        for message in messages:
            text = _text(message)
            if text:
                await acall(
                    self.workspace,
                    "capture",
                    f"{_role(message)}: {text}",
                    tags=tags,
                    kind="episodic",
                    source=SOURCE,
                )


def _text(message: ChatMessage) -> str:
    return (message.content or "").strip()


def _role(message: ChatMessage) -> str:
    return getattr(message.role, "value", str(message.role))
