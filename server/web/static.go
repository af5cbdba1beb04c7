package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// staticFile is one file served under /static/, loaded once. gz is its gzip
// form (best compression, made once at load) when that is smaller (the WASM
// panel shrinks about 3.5-fold).
type staticFile struct {
	body        []byte
	gz          []byte
	contentType string
	etag        string
}

// contentTypes that must be exact: browsers only stream-compile application/wasm.
var contentTypes = map[string]string{
	".wasm": "application/wasm",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".md":   "text/markdown; charset=utf-8",
}

// loadStatic reads every file of fsys and gzips the compressible ones. The
// files are small (the panel is a few MB), so holding them is cheaper than
// compressing per request.
func loadStatic(fsys fs.FS) (map[string]*staticFile, error) {
	files := make(map[string]*staticFile)
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		ext := path.Ext(name)
		ct, ok := contentTypes[ext]
		if !ok {
			if ct = mime.TypeByExtension(ext); ct == "" {
				ct = "application/octet-stream"
			}
		}
		sum := sha256.Sum256(body)
		f := &staticFile{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		if len(body) >= 512 && compressible(ct) {
			var buf bytes.Buffer
			// The best level, once per start: on the panel it saves ~6 KiB
			// (0.7 %) of what each page load downloads, for 0.1-0.2 s more
			// at startup; issue 11's budget is 800 KiB gzip, and the default
			// level came within 1 KiB of it.
			zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
			if err != nil {
				return fmt.Errorf("web: gzip %s: %w", name, err)
			}
			zw.Write(body)
			if err := zw.Close(); err != nil {
				return fmt.Errorf("web: gzip %s: %w", name, err)
			}
			if buf.Len() < len(body) {
				f.gz = buf.Bytes()
			}
		}
		files[name] = f
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: loading static files: %w", err)
	}
	return files, nil
}

func compressible(ct string) bool {
	return strings.HasPrefix(ct, "text/") || ct == "application/wasm" ||
		strings.HasPrefix(ct, "application/json") || strings.HasPrefix(ct, "image/svg")
}

// StaticSize returns the size of the file served at /static/name and of its
// gzip form (0 when it is served uncompressed); ok is false if there is none.
func (s *Server) StaticSize(name string) (raw, gz int, ok bool) {
	f, ok := s.files[name]
	if !ok {
		return 0, 0, false
	}
	return len(f.body), len(f.gz), true
}

func (s *Server) serveStatic(c echo.Context) error {
	f, ok := s.files[c.Param("*")]
	if !ok {
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such static file"}
	}
	h := c.Response().Header()
	h.Set("Content-Type", f.contentType)
	h.Set("ETag", f.etag)
	// Revalidate every time: the ETag makes that a cheap 304, and a rebuilt
	// panel is picked up at once.
	h.Set("Cache-Control", "no-cache")
	if f.gz != nil {
		h.Add("Vary", "Accept-Encoding")
	}
	if match := c.Request().Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		return c.NoContent(http.StatusNotModified)
	}
	body := f.body
	if f.gz != nil && acceptsGzip(c.Request().Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return c.Blob(http.StatusOK, f.contentType, body)
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip (named or
// by *, without q=0).
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "*" {
			continue
		}
		for _, param := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(param), "=")
			if q, err := strconv.ParseFloat(strings.TrimSpace(v), 64); strings.EqualFold(strings.TrimSpace(k), "q") && err == nil && q == 0 {
				return false
			}
		}
		return true
	}
	return false
}
