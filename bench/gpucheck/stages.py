#!/usr/bin/env python3
"""stages.py DIR ONNXPART MODE [MODELS [DEVICE]]: the GPU check's per-stage and per-node comparison.

DIR holds TAG.pred.json (onnxpart profile --nodes --json) and TAG.meas.json (gpucheck.py
--json) for each model of the list below; ONNXPART is the binary whose `plan` splits each
model into k = 2, 4, 8 stages on k×DEVICE (a catalog id, default H100-SXM); MODE is fp32 or tf32 (which measurement).
Per stage it sums the predicted and the measured (CUDA-graph) node times, leaving out the
nodes onnxpart classes static (a runtime folds them; the PyTorch interpreter runs them), and
prints the median |error| and how often the predicted slowest stage is the measured one
among the splits whose measured slowest stage is at least 5% slower than the next.
Models are read from MODELS (default ../shared/models, as from the repository root).
"""
import json,subprocess,statistics as st,sys
models={'resnet50_small':'resnet50_small','vgg16_small':'vgg16_small','squeezenet1_1':'squeezenet1_1','squeezenet1_1_small':'squeezenet1_1_small','googlenet_small':'googlenet_small','efficientnet_b0_small':'efficientnet_b0_small','randwire_ws_small_small':'randwire_ws_small_small','bert_base_like_small':'bert_base_like_small','mobilenet_v2_small_dynbatch_1':'mobilenet_v2_small_dynbatch','mobilenet_v2_small_dynbatch_64':'mobilenet_v2_small_dynbatch','mobilenet_v2_small_dynbatch_256':'mobilenet_v2_small_dynbatch'}
D,B,mode=sys.argv[1],sys.argv[2],sys.argv[3]
MODELS=sys.argv[4] if len(sys.argv)>4 else '../shared/models'
DEV=sys.argv[5] if len(sys.argv)>5 else 'H100-SXM'
errs=[];hit=0;tot=0;lines=[]
for tag,m in models.items():
    pred=json.load(open(f'{D}/{tag}.pred.json')); meas=json.load(open(f'{D}/{tag}.meas.json'))[mode]['nodes']
    nt=pred['model']['node_times']
    dim=[]
    if 'dynbatch' in tag: dim=['--dim','batch='+tag.rsplit('_',1)[1]]
    for k in (2,4,8):
        out=subprocess.run([B,'plan',f'{MODELS}/{m}.onnx','--devices',f'{k}x{DEV}','-k',str(k),'--json','--time-limit','10s','--bounds','none','--seed','1']+dim,capture_output=True,text=True).stdout
        d=json.loads(out)
        P=[];M=[]
        for s in d['stages']:
            p=sum(nt[i]['seconds'][0] for i in s); mm=sum((meas.get(nt[i]['name'],{}).get('graph_s') or 0) for i in s if nt[i]['class']!='static')
            P.append(p);M.append(mm)
        for p,mm in zip(P,M):
            if mm>0: errs.append(abs(p-mm)/mm)
        # bottleneck agreement among nonempty stages
        pb=max(range(len(P)),key=lambda i:P[i]); mb=max(range(len(M)),key=lambda i:M[i])
        Ms=sorted(M,reverse=True)
        det = len(Ms)<2 or Ms[0]>=1.05*Ms[1]
        tot+=det; hit+= det and pb==mb
        lines.append(f"{tag:32} k={k} pred/meas per stage: "+' '.join(f'{p*1e6:.0f}/{mm*1e6:.0f}' for p,mm in zip(P,M))+f"  bneck {'ok' if pb==mb else 'MISS'}")
print('\n'.join(lines))
print(f"{mode}: stage |err| median {st.median(errs)*100:.1f}% over {len(errs)} stages; bottleneck stage predicted {hit}/{tot}")
# node level and whole model
ne=[];wm=[]
for tag,m in models.items():
    pred=json.load(open(f'{D}/{tag}.pred.json')); me=json.load(open(f'{D}/{tag}.meas.json'))[mode]
    for r in pred['model']['node_times']:
        x=me['nodes'].get(r['name'])
        if x and not x.get('folded') and x['graph_s']: ne.append(r['seconds'][0]/x['graph_s'])
    wm.append((tag,pred['model']['total_seconds'][0]/me['total']['graph_s']))
ne.sort()
print(f"node pred/meas: median {st.median(ne):.2f} within 2x {sum(1 for x in ne if .5<=x<=2)/len(ne)*100:.0f}% of {len(ne)}")
print('whole model pred/meas: '+' '.join(f'{t[:12]}:{r:.2f}' for t,r in wm))
