// Command pto-calibrate runs the published GEMM kernel (device/calib) on a chip
// preset and prints the simulated figures beside the published ones: a JSON list
// with -json (what bench/calibrate.py prints), else a table.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"pypto/device"
	"pypto/device/calib"
)

type row struct {
	M                 int     `json:"m"`
	K                 int     `json:"k"`
	N                 int     `json:"n"`
	SimMs             float64 `json:"sim_ms"`
	PublishedMs       float64 `json:"published_ms"`
	CubeBusy          float64 `json:"cube_busy"`
	PublishedCubeBusy float64 `json:"published_cube_busy"`
	LoadBusy          float64 `json:"load_busy"`
	PublishedLoadBusy float64 `json:"published_load_busy"`
	ExtractBusy       float64 `json:"extract_busy"`
	StoreBusy         float64 `json:"store_busy"`
	L2HitRate         float64 `json:"l2_hit_rate"`
}

func main() {
	asJSON := flag.Bool("json", false, "print a JSON list, one object per table row")
	chipName := flag.String("chip", "a2", "chip preset")
	trace := flag.String("trace", "", "write the Chrome trace (Perfetto) of one run to this file instead")
	mkn := flag.Int("mkn", 1536, "with -trace: m = k = n of the traced run")
	flag.Parse()
	var err error
	if *trace != "" {
		err = writeTrace(*chipName, *mkn, *trace)
	} else {
		err = run(*chipName, *asJSON)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pto-calibrate:", err)
		os.Exit(1)
	}
}

// writeTrace runs the kernel once, timing-only, and writes its swimlanes.
func writeTrace(chipName string, mkn int, path string) error {
	chip, err := device.Preset(chipName)
	if err != nil {
		return err
	}
	st, _, err := calib.Run(chip, calib.Published(mkn, chip.CubeCores), nil, nil, device.RunOptions{NoValues: true, Trace: true})
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := st.WriteChromeTrace(f); err != nil {
		f.Close()
		return err
	}
	fmt.Fprint(os.Stderr, st)
	return f.Close()
}

func run(chipName string, asJSON bool) error {
	chip, err := device.Preset(chipName)
	if err != nil {
		return err
	}
	res, err := calib.Calibrate(chip)
	if err != nil {
		return err
	}
	rows := make([]row, len(res))
	for i, r := range res {
		rows[i] = row{M: r.M, K: r.K, N: r.N, SimMs: r.SimMs, PublishedMs: r.PublishedMs,
			CubeBusy: r.CubeBusy, PublishedCubeBusy: r.PublishedCubeBusy,
			LoadBusy: r.LoadBusy, PublishedLoadBusy: r.PublishedLoadBusy,
			ExtractBusy: r.ExtractBusy, StoreBusy: r.StoreBusy, L2HitRate: r.L2HitRate}
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	fmt.Printf("%6s %9s %9s %6s %6s %6s %6s %6s %6s %6s\n", "mkn", "sim_ms", "pub_ms", "err%", "cube", "pub", "load", "pub", "mte1", "l2hit")
	for _, r := range rows {
		fmt.Printf("%6d %9.4f %9.4f %+6.1f %6.1f %6.1f %6.1f %6.1f %6.1f %6.1f\n", r.M, r.SimMs, r.PublishedMs,
			100*(r.SimMs/r.PublishedMs-1), 100*r.CubeBusy, 100*r.PublishedCubeBusy, 100*r.LoadBusy, 100*r.PublishedLoadBusy,
			100*r.ExtractBusy, 100*r.L2HitRate)
	}
	return nil
}
