// Package wire is the Kafka wire protocol layer of a Tidemark broker: the
// listener loop every broker's Kafka port runs (Server), and the client a
// follower's fetcher and the tests use to talk to it (Client). Message bodies
// are encoded and decoded by franz-go's kmsg; this package only frames them.
//
// # Frames
//
// Kafka speaks over TCP in size-prefixed frames. Every request and every
// response is
//
//	size           int32, big-endian: the number of bytes that follow
//	header         (below)
//	body           the kmsg-encoded request or response
//
// A listener refuses a size above socket.request.max.bytes (100 MiB by
// default, Options.MaxRequestBytes) or below zero, and grows its buffer only
// as bytes actually arrive, so a peer that claims 2 GiB and sends nothing
// costs nothing.
//
// # Request header
//
//	api key        int16   which API: 0 Produce, 1 Fetch, 3 Metadata, 18 ApiVersions, …
//	api version    int16   which version of that API's body layout
//	correlation id int32   chosen by the client, echoed in the response
//	client id      nullable string (int16 length, -1 for null); absent only
//	               in ControlledShutdown v0 (header v0)
//	tagged fields  only for "flexible" versions (KIP-482, header v2): an
//	               unsigned varint count, then (tag, size, bytes) entries
//
// The client id stays a classic int16-length string even in flexible
// headers, so a broker can read the header of a request whose version it does
// not know.
//
// # Response header
//
//	correlation id int32   the request's
//	tagged fields  only when the request's version is flexible, and never
//	               for ApiVersions
//
// ApiVersions responses always use the short header (v0), because a client
// that sent a version the broker does not know must still be able to read
// the error code: the broker then answers at v0 with UNSUPPORTED_VERSION and
// the ApiVersions range it does serve (KIP-511), and the client retries.
//
// # Order and missing responses
//
// A connection's requests are handled one at a time, in the order they
// arrived, and answered in that order, as Kafka does; a client may pipeline
// several requests and match responses by correlation id. A Produce request
// with acks=0 gets no response at all; if it fails, Kafka's only way to tell
// the producer is to close the connection, and so does this listener.
//
// # What closes a connection
//
// Bytes the listener cannot trust (a size out of bounds, a header or body
// that does not decode, bytes left over after the body) close the
// connection with the reason logged through log/slog: after a broken frame
// the position of the next one is unknown. An API key or version the handler
// does not serve is answered with UNSUPPORTED_VERSION when the response has
// a top-level error code to carry it, and otherwise closes the connection,
// logged. Other connections are never affected, and a panic is recovered per
// connection.
//
// # Limits
//
// A listener closes a connection that has had no request and no response
// for connections.max.idle.ms (Options.ConnectionsMaxIdle, 10 minutes), and
// closes at once any connection from an address that already holds
// max.connections.per.ip (Options.MaxConnectionsPerIP, a fortieth of the
// descriptor limit: 500 at 20,000), or any at all while the process is
// short of descriptors (internal/fds). The lab's own connections, which a
// Client dials with its default dialer (followers' fetches), pass both:
// they are the brokers' reserve (own.go). When Accept
// fails because the process is out of file descriptors (EMFILE, ENFILE) it
// waits, 5 ms doubling up to 1 s as net/http does, and accepts again; those
// failures and refusals are counted (Server.Stats) and logged at most once
// per Options.LogInterval with a count, so a flood cannot flood the log.
//
// # Zero copy
//
// Fetch responses mostly carry record batches that already sit, encoded, in
// segment files. A handler can return a Spliced response whose byte fields
// are placeholders for FileRegions; the listener writes the rest of the
// frame normally and sends the regions straight from the page cache to the
// socket with sendfile(2), at explicit offsets, so concurrent fetches of one
// file do not disturb each other.
package wire
