"""Running user code for an audit: safely (:mod:`.user_call`), in seeded chunks (:mod:`.chunks`),
in process, on local worker processes or on Ray (:mod:`.backends`, :mod:`.worker`), with
retries, timeouts and one progress bar (:mod:`.runner`, its settings :mod:`.settings`), within memory (:mod:`.memory`).

Import from the submodules: :mod:`mechanisms.base` imports :mod:`.user_call`, so this
package imports nothing itself.
"""
