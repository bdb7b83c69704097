package device

import "pypto/internal/checked"

// CheckGM refuses bytes of device memory (-1 for a size that overflowed) that the
// chip's HBM cannot hold, before anything is planned or allocated for them; what
// names the allocation in the error (a *checked.LimitError).
func (c *Chip) CheckGM(bytes int, what func() string) error {
	if c.HBMBytes <= 0 && bytes >= 0 {
		return nil
	}
	limit := c.HBMBytes
	if limit <= 0 {
		limit = int(^uint(0) >> 1)
	}
	return checked.Within(bytes, limit, what, "the device memory (HBM) of chip "+c.Name)
}

func gmWhat() string { return "the global memory given to the task" }
