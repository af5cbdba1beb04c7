// Package views holds Tidemark's templ components (pages and fragments).
package views
