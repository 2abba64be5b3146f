"""Downloads from a served explorer (a saved screen, ctrl+s) that survive a busy machine.

textual-serve streams a download by asking the tab's explorer for one chunk at a time. Its own
manager (textual-serve 1.1.3) gives each answer 4 s; when one comes later, it calls ``task_done`` on
an empty queue, the handler raises ``ValueError`` and the browser shows the download as cancelled
(textual-serve issue #29). On a loaded 2-core machine (CI, or a GPU box busy training) an explorer
can take longer than that to answer. :class:`PatientDownloads` waits :attr:`~PatientDownloads.
chunk_wait_s` for each chunk; a download that still gets nothing is broken off, so the browser says
it failed, never ended early as if it were whole.

Imported only by ``tracetui serve`` (textual-serve is the optional extra ``serve``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from textual_serve.download_manager import DOWNLOAD_CHUNK_SIZE, DownloadManager


class DownloadStalled(Exception):
    """The explorer sent no chunk of a download in time, or could no longer be asked for one."""


class PatientDownloads(DownloadManager):
    """textual-serve's download manager with a patient, correct wait for each chunk."""

    chunk_wait_s: float = 60.0

    async def download(self, delivery_key: str) -> AsyncGenerator[bytes, None]:
        """The download's chunks, in order, until the explorer sends its empty last one; raises
        :class:`DownloadStalled` when a chunk does not come."""
        app_service = await self._get_app_service(delivery_key)
        wanted = self._active_downloads[delivery_key]
        try:
            while True:
                asked = await app_service.send_meta(
                    {
                        "type": "deliver_chunk_request",
                        "key": delivery_key,
                        "size": DOWNLOAD_CHUNK_SIZE,
                        "name": wanted.name,
                    }
                )
                if not asked:
                    raise DownloadStalled(f"download {wanted.file_name}: its explorer has stopped")
                try:
                    chunk = await asyncio.wait_for(wanted.incoming_chunks.get(), self.chunk_wait_s)
                except asyncio.TimeoutError:
                    raise DownloadStalled(
                        f"download {wanted.file_name}: no data from its explorer for {self.chunk_wait_s:g} s"
                    ) from None
                wanted.incoming_chunks.task_done()
                if chunk is None:  # textual-serve cancels a closing tab's downloads with None
                    raise DownloadStalled(f"download {wanted.file_name}: its explorer has stopped")
                if not chunk:  # the explorer's last chunk is empty: the file is whole
                    return
                yield chunk
        finally:
            self._active_downloads.pop(delivery_key, None)
