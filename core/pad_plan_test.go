package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanPaddingMasksAttentionOverPaddedKeys(t *testing.T) {
	g, err := Parse(`graph attn(%x: f16[batch,s,8], %w: f16[8,8], %c: f16[]) {
  %3 = linear(%x, %w) : f16[batch,s,8]
  %4 = batch_matmul(%3, %x) {transpose_a=false, transpose_b=true} : f16[batch,s,s]
  %5 = div(%4, %c) : f16[batch,s,s]
  %6 = softmax(%5) {axis=-1} : f16[batch,s,s]
  %7 = batch_matmul(%6, %3) {transpose_a=false, transpose_b=false} : f16[batch,s,8]
  %8 = sum(%7) {axis=[2], keepdims=false} : f16[batch,s]
  return %8
}`)
	require.NoError(t, err)
	plan, err := PlanPadding(g, []string{"batch", "s"})
	require.NoError(t, err)
	require.Len(t, plan.Masks, 1)
	require.Len(t, plan.Keeps, 1)
	assert.Equal(t, "bool[1,1,s]", plan.Masks[0].Type().String())
	assert.Equal(t, "bool[1,s,1]", plan.Keeps[0].Type().String())

	pg, err := plan.Specialize(Binding{"batch": 2, "s": 16})
	require.NoError(t, err)
	text := Format(pg)
	assert.Contains(t, text, "%pad_mask0: bool[1,1,16]")
	assert.Contains(t, text, "where(%pad_mask0")
	assert.Contains(t, text, "%pad_keep0: bool[1,16,1]")
	assert.Contains(t, text, "softmax(%")
	assert.Contains(t, text, "where(%pad_keep0")

	// A reduction over the padded axis would add the padded positions in.
	g2, err := Parse(`graph r(%x: f32[s,4]) {
  %1 = sum(%x) {axis=[0], keepdims=false} : f32[4]
  return %1
}`)
	require.NoError(t, err)
	_, err = PlanPadding(g2, []string{"s"})
	assert.ErrorContains(t, err, "it reduces over a padded axis")
	// The keys' softmax is the only way padded positions may be contracted.
	g3, err := Parse(`graph m(%x: f32[4,s], %y: f32[s,4]) {
  %2 = matmul(%x, %y) : f32[4,4]
  return %2
}`)
	require.NoError(t, err)
	_, err = PlanPadding(g3, []string{"s"})
	assert.ErrorContains(t, err, "contracts a padded axis")
}

func TestPlanPaddingProvesAttentionOverPaddedKeys(t *testing.T) {
	attn := func(attrs, mask string) *Graph {
		t.Helper()
		maskParam, maskArg, res := "", "", "%3"
		if mask != "" {
			maskParam, maskArg, res = ", %m: "+mask, ", %m", "%4"
		}
		g, err := Parse(`graph a(%q: f16[b,s,8], %k: f16[b,s,8], %v: f16[b,s,4]` + maskParam + `) {
  ` + res + ` = scaled_dot_product_attention(%q, %k, %v` + maskArg + `) ` + attrs + ` : f16[b,s,4]
  return ` + res + `
}`)
		require.NoError(t, err)
		return g
	}
	// Causal: a valid query never sees a padded key; only the values' padded rows are
	// zeroed (0 * NaN would be NaN).
	plan, err := PlanPadding(attn("{is_causal=true}", ""), []string{"b", "s"})
	require.NoError(t, err)
	require.Empty(t, plan.Masks)
	require.Len(t, plan.Keeps, 1)
	assert.Equal(t, "bool[1,s,1]", plan.Keeps[0].Type().String())
	pg, err := plan.Specialize(Binding{"b": 1, "s": 32})
	require.NoError(t, err)
	text := Format(pg)
	assert.Contains(t, text, "where(%pad_keep0, %v")
	assert.Contains(t, text, "scaled_dot_product_attention(%q, %k, %")
	// A bool key-padding mask, padded False, drops the padded keys itself.
	plan, err = PlanPadding(attn("", "bool[b,1,s]"), []string{"b", "s"})
	require.NoError(t, err)
	require.Empty(t, plan.Masks)
	// Without one the plan adds a key mask: the attention's mask input...
	plan, err = PlanPadding(attn("", ""), []string{"b", "s"})
	require.NoError(t, err)
	require.Len(t, plan.Masks, 1)
	assert.Equal(t, "bool[1,1,s]", plan.Masks[0].Type().String())
	pg, err = plan.Specialize(Binding{"b": 2, "s": 16})
	require.NoError(t, err)
	assert.Contains(t, Format(pg), "scaled_dot_product_attention(%q, %k, %7, %pad_mask0)")
	// ... combined with a float mask (-inf where it drops a key) or a bool one that does
	// not run along the keys.
	for mask, how := range map[string]string{"f16[s,s]": "where(%pad_mask0, %m", "bool[1]": "logical_and(%m, %pad_mask0)"} {
		plan, err = PlanPadding(attn("", mask), []string{"b", "s"})
		require.NoError(t, err, mask)
		pg, err = plan.Specialize(Binding{"b": 2, "s": 16})
		require.NoError(t, err, mask)
		assert.Contains(t, Format(pg), how, mask)
	}
	// Causal attention whose keys are padded apart from its queries is refused.
	g, err := Parse(`graph a(%q: f16[s,8], %k: f16[t,8], %v: f16[t,4]) {
  %3 = scaled_dot_product_attention(%q, %k, %v) {is_causal=true} : f16[s,4]
  return %3
}`)
	require.NoError(t, err)
	_, err = PlanPadding(g, []string{"s", "t"})
	assert.ErrorContains(t, err, "causal over keys t padded apart from its queries s")
}
