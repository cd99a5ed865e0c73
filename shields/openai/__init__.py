"""The OpenAI chat-completions dialect, read without HTTP: where the text a shield must see
sits in a request, a reply and a stream delta, and the stages that check it.

The proxy and the offline tools (``shieldgate scan``, ``test``, ``shields.evaluate``) read
through these modules, so a record is read, checked and redacted the same way wherever it is
checked. Shapes that cannot be checked raise the dialect's own errors (``errors``); the proxy
answers them with HTTP statuses (``proxy.errors.bad_request``; a malformed reply is its 502 or
in-band error).

- ``request``: a chat request body, read into the texts of its messages and fields;
- ``input_check``: the input stage over those texts;
- ``reply``: a reply's ``message`` or a stream's ``delta``, read into text fields;
- ``channels``: the typed keys of the texts of a reply (per choice, per field or tool call);
- ``stream_indices``: the choice and tool-call indices a stream may open;
- ``reply_check``: the output stage over a whole (non-stream) reply;
- ``text_completion``: a legacy completion's choices (``text``), whole and streamed, and its
  output stage.
"""
