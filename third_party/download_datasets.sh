#!/usr/bin/env bash
# Downloads benchmark datasets from their canonical public sources into a data root and checks
# every file against third_party/dataset_sha256sums.txt. Needs internet access.
#
#   third_party/download_datasets.sh DATASET... DATA_DIR    download, then verify
#   third_party/download_datasets.sh --urls DATASET...       print "relative/path URL" lines
#   third_party/download_datasets.sh --verify DATA_DIR [SUMS] check files already present
#
# DATASET is a name from graph/datasets.h (cora, citeseer, pubmed, amazon_computers, amazon_photo,
# coauthor_cs, coauthor_physics, corafull, chameleon, squirrel, actor, texas, cornell, wisconsin,
# minesweeper, tolokers, ogbn_arxiv, wikics) or "all".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SUMS_DEFAULT="$here/dataset_sha256sums.txt"

GH=https://github.com
PLANETOID=$GH/kimiyoung/planetoid/raw/master/data
GNNB=$GH/shchur/gnn-benchmark/raw/master/data/npz
HG=$GH/yandex-research/heterophilous-graphs/raw/main/data
GEOM=$GH/graphdml-uiuc-jlu/geom-gcn/raw/master

ALL="cora citeseer pubmed amazon_computers amazon_photo coauthor_cs coauthor_physics corafull
chameleon squirrel actor texas cornell wisconsin minesweeper tolokers ogbn_arxiv wikics"

# Prints "relative_path url" for each file of a dataset.
urls() {
  local name=$1 part k
  case "$name" in
    cora|citeseer|pubmed)
      for part in x y tx ty allx ally graph test.index; do
        echo "$name/ind.$name.$part $PLANETOID/ind.$name.$part"
      done
      for k in 0 1 2 3 4 5 6 7 8 9; do
        echo "$name/geom_gcn_splits/${name}_split_0.6_0.2_$k.npz $GEOM/splits/${name}_split_0.6_0.2_$k.npz"
      done ;;
    amazon_computers) echo "$name/amazon_electronics_computers.npz $GNNB/amazon_electronics_computers.npz" ;;
    amazon_photo) echo "$name/amazon_electronics_photo.npz $GNNB/amazon_electronics_photo.npz" ;;
    coauthor_cs) echo "$name/ms_academic_cs.npz $GNNB/ms_academic_cs.npz" ;;
    coauthor_physics) echo "$name/ms_academic_phy.npz $GNNB/ms_academic_phy.npz" ;;
    corafull) echo "$name/cora_full.npz $GNNB/cora_full.npz" ;;
    chameleon|squirrel)
      echo "$name/$name.npz $HG/$name.npz"
      echo "$name/${name}_filtered.npz $HG/${name}_filtered.npz"
      echo "$name/out1_graph_edges.txt $GEOM/new_data/$name/out1_graph_edges.txt"
      for k in 0 1 2 3 4 5 6 7 8 9; do
        echo "$name/splits/${name}_split_0.6_0.2_$k.npz $GEOM/splits/${name}_split_0.6_0.2_$k.npz"
      done ;;
    actor|texas|cornell|wisconsin)
      local gg=$name; [[ $name == actor ]] && gg=film
      echo "$name/$name.npz $HG/$name.npz"
      echo "$name/out1_graph_edges.txt $GEOM/new_data/$gg/out1_graph_edges.txt"
      echo "$name/out1_node_feature_label.txt $GEOM/new_data/$gg/out1_node_feature_label.txt"
      for k in 0 1 2 3 4 5 6 7 8 9; do
        echo "$name/splits/${gg}_split_0.6_0.2_$k.npz $GEOM/splits/${gg}_split_0.6_0.2_$k.npz"
      done ;;
    minesweeper|tolokers) echo "$name/$name.npz $HG/$name.npz" ;;
    ogbn_arxiv) echo "$name/arxiv.zip http://snap.stanford.edu/ogb/data/nodeproppred/arxiv.zip" ;;
    wikics)
      echo "$name/data.json $GH/pmernyei/wiki-cs-dataset/raw/master/dataset/data.json" ;;
    *) echo "download_datasets: unknown dataset '$name' (known: $(echo $ALL))" >&2; return 2 ;;
  esac
}

# Checks every file under DATA_DIR that SUMS lists; missing files are reported, not failures.
verify() {
  local dir=$1 sums=${2:-$SUMS_DEFAULT} bad=0 ok=0 missing=0 want path got
  while read -r want path; do
    [[ -z "$want" || "$want" == \#* ]] && continue
    if [[ ! -f "$dir/$path" ]]; then missing=$((missing + 1)); continue; fi
    got=$(sha256sum "$dir/$path" | cut -d' ' -f1)
    if [[ "$got" == "$want" ]]; then
      ok=$((ok + 1))
    else
      echo "CHECKSUM MISMATCH: $dir/$path: sha256 $got, expected $want" >&2
      bad=$((bad + 1))
    fi
  done < "$sums"
  echo "verify: $ok ok, $bad mismatched, $missing not present"
  [[ $bad -eq 0 ]]
}

fetch() {
  local dir=$1 rel=$2 url=$3
  mkdir -p "$(dirname "$dir/$rel")"
  if [[ -f "$dir/$rel" ]]; then return 0; fi
  echo "fetching $url"
  if command -v curl >/dev/null; then
    curl -fL --retry 3 -o "$dir/$rel.part" "$url"
  else
    wget -q -O "$dir/$rel.part" "$url"
  fi
  mv "$dir/$rel.part" "$dir/$rel"
  if [[ "$rel" == ogbn_arxiv/arxiv.zip ]]; then
    (cd "$dir/ogbn_arxiv" && unzip -oq arxiv.zip && cp -r arxiv/raw . && rm -rf arxiv)
  fi
}

case "${1:-}" in
  --urls) shift; for n in "$@"; do urls "$n"; done ;;
  --verify) shift; verify "$@" ;;
  ""|-h|--help) sed -n '2,13p' "$0"; exit 2 ;;
  *)
    args=("$@"); dir=${args[-1]}; unset 'args[-1]'
    [[ ${#args[@]} -gt 0 ]] || { echo "download_datasets: name at least one dataset and a DATA_DIR" >&2; exit 2; }
    [[ "${args[0]}" == all ]] && args=($ALL)
    for n in "${args[@]}"; do
      urls "$n" | while read -r rel url; do fetch "$dir" "$rel" "$url"; done
    done
    verify "$dir" ;;
esac
