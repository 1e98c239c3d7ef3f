//! Requests hyper cannot parse, answered in the convention's error shape. Hyper answers them
//! itself, before any service sees a request — 400 (a malformed request line or header), 414 (a
//! URI over 64 KiB), 431 (a head over its buffer, or more than 100 headers) — with a bare head
//! (`content-length: 0`) and closes the connection; it offers no hook for the body. [`ErrorBodies`]
//! wraps a connection's stream and, when a write is exactly such an automatic answer, writes the
//! same status with the OpenAI error body instead. Only a write that is a whole automatic head
//! (status line, `connection: close`, `content-length: 0`, `date`, the blank line, nothing else)
//! is replaced: the gateway's own responses always carry `x-sovereign-id`, so none can match.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::error::ApiError;

/// The statuses hyper answers on its own, each with what it means for the client.
const AUTOMATIC: [(StatusCode, &str, &str); 3] = [
    (
        StatusCode::BAD_REQUEST,
        "Bad Request",
        "The request could not be parsed as HTTP/1.1 (a malformed request line or header).",
    ),
    (
        StatusCode::URI_TOO_LONG,
        "URI Too Long",
        "The request URI is longer than 64 KiB.",
    ),
    (
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        "Request Header Fields Too Large",
        "The request's headers are too large (over 100 headers, or a head over about 400 KiB).",
    ),
];

/// `date: Sun, 06 Dec 2026 04:52:27 GMT` is always 29 bytes of value.
const DATE_LEN: usize = 29;

/// A connection's stream whose automatic parse-error answers get a body.
pub struct ErrorBodies<S> {
    inner: S,
    /// The replacement being written, and how much of it is out.
    pending: Vec<u8>,
    sent: usize,
}

impl<S> ErrorBodies<S> {
    pub fn new(inner: S) -> Self {
        ErrorBodies {
            inner,
            pending: Vec::new(),
            sent: 0,
        }
    }
}

/// The answer to write instead of `head`, when `head` is one of hyper's automatic ones.
fn replacement(head: &[u8]) -> Option<Vec<u8>> {
    if !head.starts_with(b"HTTP/1.1 4") {
        return None;
    }
    AUTOMATIC.iter().find_map(|(status, reason, message)| {
        let start = format!(
            "HTTP/1.1 {} {reason}\r\nconnection: close\r\ncontent-length: 0\r\ndate: ",
            status.as_u16()
        );
        let date = head.strip_prefix(start.as_bytes())?;
        let date = date.strip_suffix(b"\r\n\r\n")?;
        if date.len() != DATE_LEN || !date.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
            return None;
        }
        let mut error = ApiError::new(*status, "invalid_request_error", *message);
        if *status != StatusCode::BAD_REQUEST {
            error = error.with_code("request_too_large");
        }
        let body = error.body().to_string();
        let mut out = format!(
            "HTTP/1.1 {} {reason}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\ndate: ",
            status.as_u16(),
            body.len()
        )
        .into_bytes();
        out.extend_from_slice(date);
        out.extend_from_slice(b"\r\n\r\n");
        out.extend_from_slice(body.as_bytes());
        Some(out)
    })
}

impl<S: AsyncWrite + Unpin> ErrorBodies<S> {
    /// Writes what is left of a replacement; ready when it is all out.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.pending.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        Poll::Ready(Ok(()))
    }

    /// A write of `head` (all of the caller's bytes): replaced when it is an automatic answer.
    /// `Some` when this write was taken over (the caller's bytes count as written once the
    /// replacement is out).
    fn take_over(&mut self, cx: &mut Context<'_>, head: &[u8]) -> Option<Poll<io::Result<usize>>> {
        if self.pending.is_empty() {
            self.pending = replacement(head)?;
            self.sent = 0;
        }
        Some(match self.drain(cx) {
            Poll::Ready(Ok(())) => {
                self.pending.clear();
                Poll::Ready(Ok(head.len()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        })
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ErrorBodies<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ErrorBodies<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Some(done) = self.take_over(cx, buf) {
            return done;
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        // An automatic answer is one buffer (a head, no body).
        let mut full = bufs.iter().filter(|b| !b.is_empty());
        if let (Some(head), None) = (full.next(), full.next())
            && let Some(done) = self.take_over(cx, head)
        {
            return done;
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    const DATE: &str = "Sun, 06 Dec 2026 04:52:27 GMT";

    #[test]
    fn hypers_automatic_heads_get_the_error_body() {
        for (status, reason) in [
            (400, "Bad Request"),
            (414, "URI Too Long"),
            (431, "Request Header Fields Too Large"),
        ] {
            let head = format!(
                "HTTP/1.1 {status} {reason}\r\nconnection: close\r\ncontent-length: 0\r\ndate: {DATE}\r\n\r\n"
            );
            let out = String::from_utf8(replacement(head.as_bytes()).unwrap()).unwrap();
            let (head, body) = out.split_once("\r\n\r\n").unwrap();
            assert!(head.starts_with(&format!("HTTP/1.1 {status} {reason}\r\n")));
            assert!(head.contains(&format!("content-length: {}\r\n", body.len())));
            assert!(head.ends_with(&format!("date: {DATE}")));
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            assert_eq!(v["error"]["type"], "invalid_request_error");
        }
    }

    #[test]
    fn anything_else_is_left_alone() {
        for other in [
            // The gateway's own 400 (its headers differ), a body that merely starts alike, a
            // head with a body after it, a 404.
            format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nx-sovereign-id: a\r\ncontent-length: 2\r\ndate: {DATE}\r\n\r\n{{}}"
            ),
            format!(
                "HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: {DATE}\r\n\r\nmore"
            ),
            format!(
                "HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\ndate: {DATE}\r\n\r\n"
            ),
            "{\"error\": {}}".to_string(),
            String::new(),
        ] {
            assert!(replacement(other.as_bytes()).is_none(), "{other}");
        }
    }
}
