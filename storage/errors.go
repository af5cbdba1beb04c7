package storage

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Errors carry Kafka's error codes (kerr) so the broker can put them on the
// wire unchanged; test them with errors.Is.
var (
	// ErrInvalidTopic is INVALID_TOPIC_EXCEPTION: a name that breaks Kafka's rule.
	ErrInvalidTopic = kerr.InvalidTopicException
	// ErrCorruptMessage is CORRUPT_MESSAGE: a batch whose length, magic or CRC is wrong.
	ErrCorruptMessage = kerr.CorruptMessage
	// ErrMessageTooLarge is MESSAGE_TOO_LARGE: a batch over max.message.bytes.
	ErrMessageTooLarge = kerr.MessageTooLarge
	// ErrOffsetOutOfRange is OFFSET_OUT_OF_RANGE; reads return *OffsetOutOfRangeError.
	ErrOffsetOutOfRange = kerr.OffsetOutOfRange
	// ErrKafkaStorage is KAFKA_STORAGE_ERROR: file I/O failed and the log
	// dir is offline; such errors are *StorageError.
	ErrKafkaStorage = kerr.KafkaStorageError
	// ErrClosed is returned by every call on a closed Log.
	ErrClosed = errors.New("storage: log is closed")
)

// OffsetOutOfRangeError is returned for a read outside [log start offset, LEO).
type OffsetOutOfRangeError struct {
	Offset         int64
	LogStartOffset int64
	LogEndOffset   int64
}

func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("OFFSET_OUT_OF_RANGE: offset %d is outside [%d, %d)", e.Offset, e.LogStartOffset, e.LogEndOffset)
}

// Unwrap makes errors.Is(err, ErrOffsetOutOfRange) hold.
func (e *OffsetOutOfRangeError) Unwrap() error { return ErrOffsetOutOfRange }
