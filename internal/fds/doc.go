// Package fds is the process's descriptor account: the open-file limit and
// what the web server, the brokers' listeners and their logs may take of it.
package fds
