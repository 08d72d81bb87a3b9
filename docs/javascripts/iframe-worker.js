/*
 * Search on the documentation site opened from files (file://), with no network.
 *
 * The Material theme runs its search in a Web Worker, and browsers refuse `new Worker(url)` on a
 * page opened from the file system. On such a page this script replaces `window.Worker` with
 * FileWorker, which runs the worker's script in a hidden iframe of the page's own origin and
 * passes messages both ways asynchronously, as a worker does. mkdocs.yml lists it under
 * `extra.polyfills`: the offline plugin adds a script from a CDN unless a polyfill's name holds
 * "iframe-worker", as this file's does; the theme
 * looks for `window.IFrameWorker` to find its language files beside the worker's script.
 *
 * Offered to the worker's script: postMessage, addEventListener("message") and onmessage,
 * close, and importScripts, which loads the scripts in order and returns a promise (the theme's
 * search worker waits for it). Offered to the page: postMessage, terminate, onmessage, onerror
 * and addEventListener("message" | "error").
 * tests/test_docs_site.py runs the theme's search worker through it on the built site.
 */
(function () {
  "use strict";

  if (window.location.protocol !== "file:") {
    return;
  }

  function load(doc, src) {
    return new Promise(function (resolve, reject) {
      var script = doc.createElement("script");
      script.src = src;
      script.onload = resolve;
      script.onerror = function () {
        reject(new Error("the script " + src + " did not load"));
      };
      doc.head.appendChild(script);
    });
  }

  class FileWorker extends EventTarget {
    constructor(url) {
      super();
      this.onmessage = null;
      this.onerror = null;
      this._pending = [];
      this._loaded = false;
      var frame = document.createElement("iframe");
      frame.hidden = true;
      frame.setAttribute("aria-hidden", "true");
      (document.body || document.documentElement).appendChild(frame);
      this._frame = frame;
      var scope = frame.contentWindow;
      var doc = frame.contentDocument;
      var self = this;
      scope.postMessage = function (data) {
        setTimeout(function () { self._emit("message", data); }, 0);
      };
      scope.importScripts = function () {
        var sources = Array.prototype.slice.call(arguments);
        return sources.reduce(function (done, src) {
          return done.then(function () { return load(doc, new URL(src, doc.baseURI).href); });
        }, Promise.resolve());
      };
      scope.close = function () { self.terminate(); };
      scope.addEventListener("error", function (event) { self._emit("error", event.error || event.message); });
      load(doc, new URL(url, document.baseURI).href).then(function () {
        self._loaded = true;
        self._pending.splice(0).forEach(function (data) { self._deliver(data); });
      }, function (error) { self._emit("error", error); });
    }

    postMessage(data) {
      if (this._loaded) {
        this._deliver(data);
      } else {
        this._pending.push(data);
      }
    }

    terminate() {
      if (this._frame) {
        this._frame.remove();
        this._frame = null;
      }
    }

    _deliver(data) {
      var frame = this._frame;
      setTimeout(function () {
        var scope = frame && frame.contentWindow;
        if (scope) {
          scope.dispatchEvent(new scope.MessageEvent("message", { data: data }));
        }
      }, 0);
    }

    _emit(type, payload) {
      if (!this._frame) {
        return;
      }
      var event = type === "message"
        ? new MessageEvent("message", { data: payload })
        : new ErrorEvent("error", { error: payload, message: String(payload) });
      this.dispatchEvent(event);
      var handler = type === "message" ? this.onmessage : this.onerror;
      if (typeof handler === "function") {
        handler.call(this, event);
      }
    }
  }

  window.IFrameWorker = FileWorker;
  window.Worker = FileWorker;
})();
