package store

import (
	"context"
	"time"
)

// Memory is one long-term fact remembered for a user.
type Memory struct {
	ID        string    `json:"id"`
	UserID    string    `json:"userId"`
	Text      string    `json:"text"`
	Tags      []string  `json:"tags,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Memories stores memories per user. Ranking and search are the caller's:
// a user's memories are few enough to score in memory.
type Memories interface {
	// AddMemory stores m and returns it as stored. The store assigns an ID
	// when it is empty (ErrExists when a given one is taken) and CreatedAt
	// when it is zero. Text must not be empty; UserID may be (one user).
	AddMemory(ctx context.Context, m Memory) (Memory, error)
	// ListMemories returns the user's memories, newest first.
	ListMemories(ctx context.Context, userID string) ([]Memory, error)
	// DeleteMemory removes the user's memory id; ErrNotFound when the user
	// has no such memory (another user's memory is not found either).
	DeleteMemory(ctx context.Context, userID, id string) error
}
