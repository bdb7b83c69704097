package lower

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"

	"pypto/isa"
)

func TestZeroViewChecksEveryField(t *testing.T) {
	assert.True(t, zeroView(&isa.GMView{}))
	typ := reflect.TypeOf(isa.GMView{})
	for i := range typ.NumField() {
		v := isa.GMView{}
		f := reflect.ValueOf(&v).Elem().Field(i)
		f.SetInt(1)
		assert.False(t, zeroView(&v), "zeroView misses GMView.%s", typ.Field(i).Name)
	}
}
