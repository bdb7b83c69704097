// Command pto-calibrate runs the kernels of the published measurements (device/calib:
// the GEMM and top-k tables of docs/sources.md) and the single-instruction
// measurements ("instr-cycles") on a chip preset and prints the simulated figures
// beside the published ones, with each row's leave-one-out prediction: a JSON list
// with -json (what bench/calibrate.py prints; instruction rows have kind "instr"),
// else the tables. -fit fits the fitted preset constants to all rows; -update also
// writes them to device/presets_fitted.go and regenerates the calibration and
// instruction tables of docs/device.md; -sensitivity prints (with -update:
// regenerates) the sensitivity table.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"

	"pypto/device"
	"pypto/device/calib"
	"pypto/internal/atomicfile"
)

func main() {
	asJSON := flag.Bool("json", false, "print a JSON list, one object per table row")
	chipName := flag.String("chip", "a2", "chip preset")
	trace := flag.String("trace", "", "write the Chrome trace (Perfetto) of one GEMM run to this file instead")
	mkn := flag.Int("mkn", 1536, "with -trace: m = k = n of the traced run")
	fit := flag.Bool("fit", false, "fit the fitted constants to every row and print them")
	update := flag.Bool("update", false, "refit, rewrite device/presets_fitted.go and the calibration table of docs/device.md (with -sensitivity: the sensitivity table); run from the repository root")
	sens := flag.Bool("sensitivity", false, "scale each assumed constant by 0.5 and 2 and print the change of every row's time")
	flag.Parse()
	var err error
	switch {
	case *trace != "":
		err = writeTrace(*chipName, *mkn, *trace)
	case *sens:
		err = runSensitivity(*chipName, *asJSON, *update)
	case *fit:
		err = runFit(*chipName)
	case *update:
		err = runUpdate(*chipName)
	default:
		err = run(*chipName, *asJSON)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pto-calibrate:", err)
		os.Exit(1)
	}
}

// writeTrace runs the GEMM once, timing-only, and writes its swimlanes.
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

// fitPreset fits the fitted constants of the named preset: the instruction costs to
// the single-instruction rows (applied to the chip it returns), then the kernel
// constants to the kernel rows with them.
func fitPreset(chipName string) (*device.Chip, calib.Fitted, []int, error) {
	chip, err := device.Preset(chipName)
	if err != nil {
		return nil, calib.Fitted{}, nil, err
	}
	vals, err := calib.FitInstr(chip)
	if err != nil {
		return nil, calib.Fitted{}, nil, err
	}
	calib.ApplyInstr(chip, vals)
	f, err := calib.Fit(chip)
	return chip, f, vals, err
}

func runFit(chipName string) error {
	_, f, vals, err := fitPreset(chipName)
	if err == nil {
		fmt.Println(f)
		for k, c := range calib.InstrConstants() {
			fmt.Printf("%s=%d\n", c.Name, vals[k])
		}
	}
	return err
}

const (
	docsPath   = "docs/device.md"
	fittedPath = "device/presets_fitted.go"
)

// runUpdate fits the constants, writes them to the presets, and regenerates the
// calibration table with them.
func runUpdate(chipName string) error {
	chip, f, vals, err := fitPreset(chipName)
	if err != nil {
		return err
	}
	f.Apply(chip)
	res, f2, err := calib.Calibrate(chip)
	if err != nil {
		return err
	}
	if f2 != f {
		return fmt.Errorf("the refit with the fitted constants applied moved: %v -> %v", f, f2)
	}
	in, err := calib.CalibrateInstr(chip)
	if err != nil {
		return err
	}
	if !slices.Equal(in.Values, vals) {
		return fmt.Errorf("the instruction refit with its constants applied moved: %v -> %v", vals, in.Values)
	}
	if err := atomicfile.WriteFile(fittedPath, []byte(calib.FittedSource(f, calib.Cases(chip), in))); err != nil {
		return err
	}
	fmt.Println(f)
	if err := rewriteDocs(calib.InstrBegin, calib.InstrEnd, calib.InstrMarkdown(in)); err != nil {
		return err
	}
	return rewriteDocs(calib.CalibrationBegin, calib.CalibrationEnd, calib.Summary(res, f, calib.Cases(chip)))
}

func rewriteDocs(begin, end, body string) error {
	data, err := os.ReadFile(docsPath)
	if err != nil {
		return err
	}
	doc, err := calib.ReplaceBetween(string(data), begin, end, body)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(docsPath, []byte(doc))
}

func run(chipName string, asJSON bool) error {
	chip, err := device.Preset(chipName)
	if err != nil {
		return err
	}
	res, _, err := calib.Calibrate(chip)
	if err != nil {
		return err
	}
	in, err := calib.CalibrateInstr(chip)
	if err != nil {
		return err
	}
	if asJSON {
		rows := make([]map[string]any, 0, len(res)+len(in.Rows))
		for _, r := range res {
			rows = append(rows, calib.JSONRow(r))
		}
		for _, r := range in.Rows {
			rows = append(rows, calib.InstrJSONRow(r))
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	fmt.Print(calib.Markdown(res))
	fmt.Println()
	fmt.Print(calib.InstrMarkdown(in))
	return nil
}

func runSensitivity(chipName string, asJSON, update bool) error {
	chip, err := device.Preset(chipName)
	if err != nil {
		return err
	}
	cases, rows, err := calib.Sensitivity(chip)
	if err != nil {
		return err
	}
	if update {
		return rewriteDocs(calib.SensitivityBegin, calib.SensitivityEnd, calib.SensitivityMarkdown(cases, rows))
	}
	if !asJSON {
		fmt.Print(calib.SensitivityMarkdown(cases, rows))
		return nil
	}
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		per := map[string]float64{}
		for j, c := range cases {
			per[c.Name] = r.Change[j]
		}
		out[i] = map[string]any{"constant": r.Constant, "factor": r.Factor, "rows": per}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
